// MultiHeadAttention forward + backward (training plan, input gradients too) at a Transformer block's shape:
// batch 32, length 256, 8 heads of 64 (model dim 512), self-attention, float32 on the CPU. Prints one JSON object:
// {"layer": "multi_head_attention", "ms": median milliseconds per forward+backward, "ex_per_s": examples per second}.
// With a third argument "op": ops::dot_product_attention alone on q, k, v [batch, 256, 8, 64], forward and the
// gradients of all three ({"layer": "dot_product_attention", ...}). Run through bench/attention.sh, which runs
// PyTorch (Linear projections + scaled_dot_product_attention + output projection; scaled_dot_product_attention
// alone) on the same shapes and thread count and prints the ratios. On the device TOWER_DEVICE names (default the
// CPU; scripts/gpu-check.sh runs it on cuda:0), each step waiting for the device before its time is taken.
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace tower;

namespace {

constexpr Index kLength = 256, kHeads = 8, kHeadDim = 64;

// The median of `iters` timed calls of step, after two untimed ones.
double median_ms(int iters, const std::function<void()>& step) {
  std::vector<double> times;
  for (int i = 0; i < 2 + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Tensor uniform(const Shape& shape, Generator& g) {
  Tensor t(shape, DType::float32);
  float* p = t.data<float>();
  for (Index i = 0; i < t.numel(); ++i) p[i] = g.uniform(-1.f, 1.f);
  return t;
}

double layer_ms(int iters, Index batch) {
  auto x = Input({kLength, kHeads * kHeadDim});
  layers::MultiHeadAttention mha({.num_heads = static_cast<int>(kHeads), .key_dim = static_cast<int>(kHeadDim)});
  Model model({x}, {mha({x, x})[0]});
  PlanOptions o;
  o.batch_size = batch;
  o.training = true;
  o.backward = true;
  o.input_gradients = true;
  o.device = default_device();  // TOWER_DEVICE, else the CPU
  model.to(o.device);
  Plan plan(model.impl(), o);
  Generator g(1);
  plan.set_input(0, uniform(Shape{batch, kLength, kHeads * kHeadDim}, g).to(o.device));
  plan.forward();
  plan.output_grad(0).fill(0.01f);
  return median_ms(iters, [&] {
    plan.forward();
    plan.backward();
    // A GPU runs the step asynchronously: reading the gradients back waits for it.
    if (!o.device.is_cpu()) (void)plan.flat_grads().to(Device::cpu());
  });
}

double op_ms(int iters, Index batch) {
  Generator g(1);
  const Device device = default_device();
  const Shape shape{batch, kLength, kHeads, kHeadDim};
  const Tensor q = uniform(shape, g).to(device), k = uniform(shape, g).to(device), v = uniform(shape, g).to(device);
  const Tensor grad = Tensor::full(shape, 0.01f).to(device);
  return median_ms(iters, [&] {
    ops::Recording recording;
    for (const Tensor& t : {q, k, v}) recording.watch(t);
    Tensor y;
    {
      ops::RecordingScope scope(recording);
      y = ops::dot_product_attention(q, k, v);
    }
    const std::vector<Tensor> grads = recording.gradients({y}, {grad}, {q, k, v});
    if (!device.is_cpu()) (void)ops::sum(grads[0]).to(Device::cpu());  // waits for the device
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  const Index batch = argc > 2 ? std::atoi(argv[2]) : 32;
  const bool op = argc > 3 && std::string(argv[3]) == "op";
  const double ms = op ? op_ms(iters, batch) : layer_ms(iters, batch);
  std::printf("{\"layer\": \"%s\", \"ms\": %.3f, \"ex_per_s\": %.2f, \"threads\": %d}\n",
              op ? "dot_product_attention" : "multi_head_attention", ms, 1000.0 * static_cast<double>(batch) / ms,
              backend::num_threads());
  return 0;
}
