// A Dense + ReLU written with tower::ops as a CustomLayer against Tower's own Dense(activation="relu"): the same MLP
// (784 -> 256 -> 256 -> 10, Adam, batch 128) trained for `steps` steps each, one after the other in this run, on
// Fashion-MNIST-shaped random data. Prints both step times and their ratio (issue 30's goal: within 1.15x).
//   bench_ops_layer [steps=200] [repeats=3]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace tower;

namespace {

struct OpsDenseOptions {
  int units = 256;
  std::string name;
  template <class V> void visit(V&& v) {
    v("units", units);
    v("name", name);
  }
};

class OpsDense final : public CustomLayer {
 public:
  using Options = OpsDenseOptions;
  explicit OpsDense(Options o) : CustomLayer("OpsDense", o.name), options_(std::move(o)) { options_.name = name(); }
  void build(const std::vector<Shape>& in) override {
    kernel_ = add_weight("kernel", {in[0][-1], options_.units});
    bias_ = add_weight("bias", {options_.units}, "zeros");
  }
  std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override {
    return {ops::relu(ops::matmul(x[0], kernel_->value) + bias_->value)};
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr kernel_, bias_;
};

Model mlp(bool with_ops) {
  auto in = Input({784});
  SymbolicTensor h = in;
  for (int i = 0; i < 2; ++i)
    h = with_ops ? (*std::make_shared<OpsDense>(OpsDenseOptions{.units = 256}))(h)
                 : layers::Dense({.units = 256, .activation = "relu"})(h);
  return Model(in, layers::Dense({.units = 10, .activation = "softmax"})(h));
}

double seconds_per_step(bool with_ops, const Tensor& x, const Tensor& y, int steps) {
  Model model = mlp(with_ops);
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
  model.fit(x.slice(0, 128 * 5), y.slice(0, 128 * 5), {.epochs = 1, .batch_size = 128, .verbose = 0});  // warm up
  const auto t0 = std::chrono::steady_clock::now();
  model.fit(x, y, {.epochs = 1, .batch_size = 128, .verbose = 0, .steps_per_epoch = steps});
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  set_random_seed(1);
  const Index n = 128 * static_cast<Index>(steps);
  Generator g(7);
  std::vector<float> xs(static_cast<std::size_t>(n * 784)), ys(static_cast<std::size_t>(n));
  for (float& v : xs) v = g.uniform();
  for (float& v : ys) v = static_cast<float>(static_cast<int>(g.uniform() * 10.f));
  const Tensor x = Tensor::from_vector(xs, Shape{n, 784}), y = Tensor::from_vector(ys, Shape{n});
  double built_in = 1e9, with_ops = 1e9;
  for (int r = 0; r < repeats; ++r) {  // alternated, the best of each
    built_in = std::min(built_in, seconds_per_step(false, x, y, steps));
    with_ops = std::min(with_ops, seconds_per_step(true, x, y, steps));
  }
  std::printf("{\"bench\": \"ops_layer\", \"threads\": %d, \"built_in_dense_ms_per_step\": %.3f, "
              "\"ops_dense_ms_per_step\": %.3f, \"ops_over_built_in\": %.2f}\n",
              backend::num_threads(), built_in * 1e3, with_ops * 1e3, with_ops / built_in);
  return 0;
}
