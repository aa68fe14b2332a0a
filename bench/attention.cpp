// MultiHeadAttention forward + backward (training plan, input gradients too) at a Transformer block's shape:
// batch 32, length 256, 8 heads of 64 (model dim 512), self-attention, float32 on the CPU. Prints one JSON object:
// {"layer": "multi_head_attention", "ms": median milliseconds per forward+backward, "ex_per_s": examples per second}.
// Run through bench/attention.sh, which runs PyTorch (Linear projections + scaled_dot_product_attention + output
// projection) on the same shapes and thread count and prints the ratio.
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace tower;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  const Index batch = argc > 2 ? std::atoi(argv[2]) : 32, length = 256, heads = 8, head_dim = 64, dim = heads * head_dim;
  auto x = Input({length, dim});
  layers::MultiHeadAttention mha({.num_heads = static_cast<int>(heads), .key_dim = static_cast<int>(head_dim)});
  Model model({x}, {mha({x, x})[0]});
  PlanOptions o;
  o.batch_size = batch;
  o.training = true;
  o.backward = true;
  o.input_gradients = true;
  Plan plan(model.impl(), o);
  Tensor in(Shape{batch, length, dim}, DType::float32);
  Generator g(1);
  float* p = in.data<float>();
  for (Index i = 0; i < in.numel(); ++i) p[i] = g.uniform(-1.f, 1.f);
  plan.set_input(0, in);
  plan.forward();
  plan.output_grad(0).fill(0.01f);
  std::vector<double> times;
  for (int i = 0; i < 2 + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.forward();
    plan.backward();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double ms = times[times.size() / 2];
  std::printf("{\"layer\": \"multi_head_attention\", \"ms\": %.3f, \"ex_per_s\": %.2f, \"threads\": %d}\n", ms,
              1000.0 * static_cast<double>(batch) / ms, backend::num_threads());
  return 0;
}
