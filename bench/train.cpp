// Training throughput on the real Fashion-MNIST: the MLP (784-256-256-10) or Keras' simple convnet, Adam 1e-3,
// batch 128, on the model's default device (TOWER_DEVICE, else GPU 0 when visible, else the CPU). Prints one
// JSON line. Run through bench/train.sh, which runs PyTorch and Keras on the same models, data, batch size and
// thread count in the same run; scripts/gpu-check.sh runs it on a GPU.
//   bench_train mlp|convnet [epochs=2] [batch=128] [Fashion-MNIST folder]
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

using namespace tower;

namespace {

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
  } else if (which == "convnet") {
    body = {layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}), layers::MaxPooling2D(),
            layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}), layers::MaxPooling2D(),
            layers::Flatten(), layers::Dropout({.rate = 0.5})};
  } else {
    std::fprintf(stderr, "usage: bench_train mlp|convnet [epochs] [batch] [Fashion-MNIST folder]\n");
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
