// Training throughput on the real Fashion-MNIST: the MLP (784-256-256-10), Keras' simple convnet, or that convnet
// with a squeeze-and-excitation block written with tower::ops (examples/custom_layer.cpp's), Adam 1e-3,
// batch 128, on the model's default device (TOWER_DEVICE, else GPU 0 when visible, else the CPU). Prints one
// JSON line. Run through bench/train.sh, which runs PyTorch and Keras on the same models, data, batch size and
// thread count in the same run; scripts/gpu-check.sh runs it on a GPU.
//   bench_train mlp|convnet|se_convnet [epochs=2] [batch=128] [Fashion-MNIST folder]
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

using namespace tower;

namespace {

// Each channel scaled by a gate computed from all channels' means (no biases, ratio 4), written with ops.
class SqueezeExcite final : public CustomLayer {
 public:
  SqueezeExcite() : CustomLayer("SqueezeExcite", "") {}
  void build(const std::vector<Shape>& input_shapes) override {
    const Index channels = input_shapes[0][-1];
    squeeze_ = add_weight("squeeze", {channels, channels / 4});
    excite_ = add_weight("excite", {channels / 4, channels});
  }
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool) override {
    const Tensor& x = inputs[0];
    const Tensor gate = ops::sigmoid(ops::matmul(ops::relu(ops::matmul(ops::mean(x, {1, 2}), squeeze_->value)), excite_->value));
    return {x * ops::reshape(gate, {gate.shape()[0], 1, 1, gate.shape()[1]})};
  }
  Config get_config() const override { return {}; }

 private:
  VariablePtr squeeze_, excite_;
};

int run(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "mlp";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 2;
  const int batch = argc > 3 ? std::atoi(argv[3]) : 128;
  const data::LoadOptions files{.directory = argc > 4 ? argv[4] : ""};
  set_random_seed(1);
  std::vector<LayerPtr> body;
  if (which == "mlp") {
    body = {layers::Flatten(), layers::Dense({.units = 256, .activation = "relu"}),
            layers::Dense({.units = 256, .activation = "relu"})};
  } else if (which == "convnet" || which == "se_convnet") {
    body = {layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}), layers::MaxPooling2D(),
            layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"})};
    if (which == "se_convnet") body.push_back(std::make_shared<SqueezeExcite>());
    for (LayerPtr l : std::vector<LayerPtr>{layers::MaxPooling2D(), layers::Flatten(), layers::Dropout({.rate = 0.5})})
      body.push_back(l);
  } else {
    std::fprintf(stderr, "usage: bench_train mlp|convnet|se_convnet [epochs] [batch] [Fashion-MNIST folder]\n");
    return 2;
  }
  Sequential model({InputLayer({.shape = {28, 28, 1}})});
  for (const LayerPtr& l : body) model.add(l);
  model.add(layers::Dense({.units = 10, .activation = "softmax"}));
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});

  auto train = data::fashion_mnist::load("train", files).shuffle(60000).batch(batch).prefetch(2);
  auto test = data::fashion_mnist::load("test", files).batch(1000);
  const auto t0 = std::chrono::steady_clock::now();
  model.fit(train, {.epochs = epochs, .verbose = 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double acc = *model.evaluate(test, {.verbose = 0}).get("sparse_categorical_accuracy");
  std::printf("{\"framework\": \"tower\", \"model\": \"%s\", \"examples_per_sec\": %.1f, \"test_accuracy\": %.4f, "
              "\"seconds\": %.2f, \"threads\": %d, \"device\": \"%s\"}\n",
              which.c_str(), 60000.0 * epochs / seconds, acc, seconds, backend::num_threads(),
              model.device().to_string().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  }
}
