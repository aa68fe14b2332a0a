// The compute floor of one MLP (784-256-256-10) training step at batch 128 on this machine, and Tower's step
// beside it. The floor is only the step's eight matrix products (three forward, three weight gradients, two input
// gradients; the first layer needs none), timed back to back through the backend's GEMM with no other work, on
// buffers that never change: no framework's step can be faster on the same GEMM, so examples/sec = batch / floor
// bounds any of them. Beside it, on bench_train's MLP and one fixed batch of Fashion-MNIST-like values:
//   forward_backward: the model's compiled plan, forward and backward (the GEMMs, bias, ReLU and their
//                     gradients; no loss, no update);
//   sgd_step, adam_step: Model::train_step as fit runs it (loss, metric, backward, the optimizer's update), with
//                     SGD(1e-3) and with Adam(1e-3), bench_train's optimizer; no data pipeline.
// All four take turns in rounds so that each sees the same machine. Each time is the median of its rounds'
// medians; each ratio (x_over_floor) the median of the rounds' ratios to the floor. Prints one JSON line;
// bench/train.sh runs it beside the training benchmark.
//   bench_mlp_gemm_floor [batch=128] [repeats=100] [rounds=11]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_stats.h"

using namespace tower;
using bench::median;

namespace {

// Median and best milliseconds of `repeats` calls of `fn`, after a few unmeasured ones.
std::pair<double, double> time_ms(const std::function<void()>& fn, int repeats) {
  for (int i = 0; i < 5; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return {median(ms), *std::min_element(ms.begin(), ms.end())};
}

Sequential mlp(const optimizers::OptimizerPtr& optimizer) {
  set_random_seed(1);
  Sequential model({InputLayer({.shape = {28, 28, 1}})});
  for (const LayerPtr& l : std::vector<LayerPtr>{layers::Flatten(), layers::Dense({.units = 256, .activation = "relu"}),
                                                 layers::Dense({.units = 256, .activation = "relu"}),
                                                 layers::Dense({.units = 10, .activation = "softmax"})})
    model.add(l);
  model.compile(optimizer, losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  return model;
}

}  // namespace

int main(int argc, char** argv) {
  const Index batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 100;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 11;
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
  const auto floor_step = [&] {
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

  Generator gen(7);
  std::vector<float> pixels(static_cast<std::size_t>(batch) * 784);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (float& p : pixels) p = gen.uniform();
  for (std::int32_t& y : labels) y = static_cast<std::int32_t>(gen.next_u64() % 10);
  const data::Element batch_data = {Tensor::from_vector(pixels, {batch, 28, 28, 1}),
                                    Tensor::from_vector(labels, {batch})};
  Sequential adam = mlp(optimizers::Adam(1e-3)), sgd = mlp(optimizers::SGD(1e-3));
  // The plan's forward and backward alone, on a copy of the model whose weights nothing updates.
  Sequential fixed = mlp(optimizers::SGD(1e-3));
  fixed->train_step(batch_data);
  Plan& plan = fixed->plan_for(batch, true);
  plan.set_input(0, batch_data[0]);
  plan.output_grad(0).fill(1.f / static_cast<float>(batch));
  if (plan.output_is_fusable_softmax(0)) plan.set_output_grad_is_logits(0, true);

  const std::vector<std::pair<std::string, std::function<void()>>> runs = {
      {"floor", floor_step},
      {"forward_backward", [&] { plan.forward(); plan.backward(); }},
      {"sgd_step", [&] { sgd->train_step(batch_data); }},
      {"adam_step", [&] { adam->train_step(batch_data); }}};
  std::vector<std::vector<double>> medians(runs.size()), bests(runs.size()), ratios(runs.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const auto [m, b] = time_ms(runs[k].second, repeats);
      medians[k].push_back(m);
      bests[k].push_back(b);
      ratios[k].push_back(m / medians[0].back());
    }
  const double floor_ms = median(medians[0]);
  const double best = *std::min_element(bests[0].begin(), bests[0].end());
  std::printf("{\"what\": \"mlp_gemm_floor\", \"batch\": %lld, \"mflop_per_step\": %.1f, \"median_ms\": %.3f, "
              "\"best_ms\": %.3f, \"gflops_median\": %.1f, \"max_examples_per_sec\": %.0f",
              static_cast<long long>(batch), flops / 1e6, floor_ms, best, flops / floor_ms / 1e6,
              batch / best * 1000.0);
  for (std::size_t k = 1; k < runs.size(); ++k)
    std::printf(", \"%s_ms\": %.3f, \"%s_over_floor\": %.2f", runs[k].first.c_str(), median(medians[k]),
                runs[k].first.c_str(), median(ratios[k]));
  std::printf(", \"rounds\": %d, \"threads\": %d}\n", rounds, backend::num_threads());
  return 0;
}
