// The compute floor of one MLP (784-256-256-10) training step at batch 128 on this machine: only its eight
// matrix products (three forward, three weight gradients, two input gradients; the first layer needs none),
// timed back to back through the backend's GEMM with no other work. No framework's step can be faster than
// this floor on the same GEMM, so examples/sec = batch / floor is an upper bound for any of them. Prints one
// JSON line; bench/train.sh runs it beside the training benchmark.
//   bench_mlp_gemm_floor [batch=128] [repeats=300]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace tower;

int main(int argc, char** argv) {
  const Index batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 300;
  const std::vector<Index> widths = {784, 256, 256, 10};
  backend::Backend& be = backend::get(Device::cpu());

  std::vector<std::vector<float>> acts, grads, weights, weight_grads;
  for (std::size_t l = 0; l < widths.size(); ++l) {
    acts.emplace_back(batch * widths[l], 0.01f);
    grads.emplace_back(batch * widths[l], 0.01f);
  }
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    weights.emplace_back(widths[l] * widths[l + 1], 0.01f);
    weight_grads.emplace_back(widths[l] * widths[l + 1], 0.f);
  }
  double flops = 0;
  const auto step = [&] {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l)  // y = x W
      be.gemm(false, false, batch, widths[l + 1], widths[l], 1.f, acts[l].data(), widths[l], weights[l].data(),
              widths[l + 1], 0.f, acts[l + 1].data(), widths[l + 1]);
    for (std::size_t l = widths.size() - 1; l-- > 0;) {
      // dW = x^T dy; dx = dy W^T
      be.gemm(true, false, widths[l], widths[l + 1], batch, 1.f, acts[l].data(), widths[l], grads[l + 1].data(),
              widths[l + 1], 0.f, weight_grads[l].data(), widths[l + 1]);
      if (l > 0)
        be.gemm(false, true, batch, widths[l], widths[l + 1], 1.f, grads[l + 1].data(), widths[l + 1],
                weights[l].data(), widths[l + 1], 0.f, grads[l].data(), widths[l]);
    }
  };
  for (std::size_t l = 0; l + 1 < widths.size(); ++l)
    flops += 2.0 * batch * widths[l] * widths[l + 1] * (l > 0 ? 3 : 2);

  for (int i = 0; i < 20; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2], best = ms.front();
  std::printf("{\"what\": \"mlp_gemm_floor\", \"batch\": %lld, \"mflop_per_step\": %.1f, \"median_ms\": %.3f, "
              "\"best_ms\": %.3f, \"gflops_median\": %.1f, \"max_examples_per_sec\": %.0f, \"threads\": %d}\n",
              static_cast<long long>(batch), flops / 1e6, median, best, flops / median / 1e6,
              batch / best * 1000.0, backend::num_threads());
  return 0;
}
