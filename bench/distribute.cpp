// MirroredStrategy on CPU replicas: the overhead of the strategy machinery with one replica against no strategy,
// and how throughput scales with CPU replicas and their OpenMP threads. Training steps (train_on_batch on fixed
// tensors, so the input pipeline is not timed) of a small convnet with BatchNormalization, Adam 1e-3.
// Configurations are timed in interleaved rounds, so a load change on a shared machine hits all of them alike;
// each reports the median and the best round (examples per wall-clock second) and the median examples per
// second of process CPU time. Prints one JSON line per configuration. "overhead" times only no strategy against
// MirroredStrategy with one replica.
//   bench_distribute [rounds=7] [steps_per_round=20] [batch_per_replica=64] [overhead]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "bench_convnet.h"

using namespace tower;

namespace {

struct Setup {
  std::string name;
  int replicas = 0;       // 0: no strategy
  int total_threads = 0;  // OpenMP threads shared by the replicas
  Index global_batch = 0;
  std::optional<Model> model;
  Tensor x, y;
  std::vector<double> rates;      // examples per wall-clock second, per round
  std::vector<double> cpu_rates;  // examples per second of this process's CPU time, per round
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const Index per_replica = argc > 3 ? std::atoi(argv[3]) : 64;
  const bool overhead_only = argc > 4 && std::string(argv[4]) == "overhead";
  const int cores = backend::num_threads();
  set_random_seed(1);

  std::vector<Setup> configs;
  configs.push_back({"no strategy", 0, cores, per_replica});
  configs.push_back({"MirroredStrategy, 1 replica", 1, cores, per_replica});
  for (int r = 2; r <= 4 && !overhead_only; r *= 2) {
    configs.push_back({"MirroredStrategy, " + std::to_string(r) + " replicas x " +
                           std::to_string(std::max(1, cores / r)) + " threads",
                       r, cores, per_replica * r});
    if (cores / r < 2)
      configs.push_back({"MirroredStrategy, " + std::to_string(r) + " replicas x 2 threads (oversubscribed)", r,
                         2 * r, per_replica * r});
  }
  for (Setup& c : configs) {
    backend::set_num_threads(c.total_threads);  // replicas take total / replicas threads each when made
    std::optional<distribute::MirroredStrategy> strategy;
    if (c.replicas > 0) {
      std::vector<std::string> devices;
      for (int r = 0; r < c.replicas; ++r) devices.push_back("cpu:" + std::to_string(r));
      strategy.emplace(devices);
    }
    {
      std::optional<distribute::StrategyScope> scope;
      if (strategy) scope.emplace(strategy->scope());
      c.model.emplace(bench::batch_norm_convnet());
      c.model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                       {metrics::SparseCategoricalAccuracy()});
    }
    Generator g(7);
    std::vector<float> x(static_cast<std::size_t>(c.global_batch * 28 * 28));
    for (float& v : x) v = g.uniform();
    std::vector<std::int32_t> y(static_cast<std::size_t>(c.global_batch));
    for (auto& v : y) v = static_cast<std::int32_t>(g.next_u64() % 10);
    c.x = Tensor::from_vector(x, Shape{c.global_batch, 28, 28, 1});
    c.y = Tensor::from_vector(y, Shape{c.global_batch});
    for (int s = 0; s < 3; ++s) c.model->train_on_batch(c.x, c.y);  // plans, buffers, optimizer slots
  }
  for (int round = 0; round < rounds; ++round)
    for (Setup& c : configs) {
      backend::set_num_threads(c.total_threads);
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      for (int s = 0; s < steps; ++s) c.model->train_on_batch(c.x, c.y);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      c.rates.push_back(static_cast<double>(c.global_batch) * steps / seconds);
      c.cpu_rates.push_back(static_cast<double>(c.global_batch) * steps / (cpu_seconds() - c0));
    }
  // CPU time is the steadier measure on a shared machine: it counts the work done, not the share of the cores
  // the scheduler gave this process.
  double baseline = 0, best_baseline = 0, cpu_baseline = 0;
  for (Setup& c : configs) {
    std::sort(c.rates.begin(), c.rates.end());
    std::sort(c.cpu_rates.begin(), c.cpu_rates.end());
    const double median = c.rates[c.rates.size() / 2], cpu_median = c.cpu_rates[c.cpu_rates.size() / 2];
    const double best = c.rates.back();
    if (c.replicas == 0) {
      baseline = median;
      best_baseline = best;
      cpu_baseline = cpu_median;
    }
    std::printf("{\"config\": \"%s\", \"replicas\": %d, \"threads\": %d, \"global_batch\": %lld, "
                "\"examples_per_sec\": %.1f, \"vs_no_strategy\": %.4f, \"best_examples_per_sec\": %.1f, "
                "\"best_vs_no_strategy\": %.4f, \"examples_per_cpu_sec\": %.1f, \"cpu_vs_no_strategy\": %.4f}\n",
                c.name.c_str(), c.replicas, c.total_threads, static_cast<long long>(c.global_batch), median,
                median / baseline, best, best / best_baseline, cpu_median, cpu_median / cpu_baseline);
  }
  return 0;
}
