// Forward + backward time of single layers at MobileNetV2-like shapes (training mode, NHWC, float32).
// Prints one JSON object per line: {"layer": ..., "ms": median milliseconds per forward+backward}.
// Run through bench/layers.sh, which runs PyTorch on the same shapes and thread count and prints ratios.
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace tower;

namespace {

struct Case {
  const char* name;
  Shape input;  // with batch
  std::function<LayerPtr()> make;
};

double median_ms(Plan& plan, int warmup, int iters) {
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.forward();
    plan.backward();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::vector<Case> cases = {
      {"conv2d_1x1", {16, 56, 56, 24}, [] { return LayerPtr(layers::Conv2D({.filters = 144, .kernel_size = 1, .use_bias = false})); }},
      {"conv2d_3x3", {16, 56, 56, 32}, [] { return LayerPtr(layers::Conv2D({.filters = 32, .kernel_size = 3, .padding = "same", .use_bias = false})); }},
      {"depthwise_conv2d_3x3", {16, 56, 56, 144}, [] { return LayerPtr(layers::DepthwiseConv2D({.kernel_size = 3, .padding = "same", .use_bias = false})); }},
      {"batch_normalization", {16, 56, 56, 144}, [] { return LayerPtr(layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3})); }},
      {"dense", {64, 1280}, [] { return LayerPtr(layers::Dense({.units = 1000})); }},
      {"max_pooling2d", {128, 26, 26, 32}, [] { return LayerPtr(layers::MaxPooling2D()); }},  // the convnet's first
  };
  for (const Case& c : cases) {
    LayerPtr layer = c.make();
    auto in = Input(c.input.without_batch());
    Model model(in, (*layer)(in));
    PlanOptions o;
    o.batch_size = c.input[0];
    o.training = true;
    o.backward = true;
    o.input_gradients = true;  // a layer inside a network also computes its input gradient
    Plan plan(model.impl(), o);
    Tensor x = Tensor::full(c.input, 0.5f);
    Generator g(1);
    float* px = x.data<float>();
    for (Index i = 0; i < x.numel(); ++i) px[i] = g.uniform(-1.f, 1.f);
    plan.set_input(0, x);
    plan.forward();
    plan.output_grad(0).fill(0.01f);
    const double ms = median_ms(plan, 3, iters);
    std::printf("{\"layer\": \"%s\", \"ms\": %.3f, \"threads\": %d}\n", c.name, ms, backend::num_threads());
    std::fflush(stdout);
  }
  return 0;
}
