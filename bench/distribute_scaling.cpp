// Examples per second against the number of MirroredStrategy replicas, on CPU replicas or on logical GPUs of one
// GPU (set_logical_gpus_per_gpu, as TOWER_LOGICAL_GPUS does). Each replica takes batch_per_replica examples of
// every global batch (weak scaling); the steps are train_on_batch on fixed tensors, so the input pipeline is not
// timed. The model is bench_convnet.h's Fashion-MNIST convnet (two Conv2D + BatchNormalization blocks,
// Dense 128, Dense 10), Adam 1e-3. Prints one JSON line per replica count, with the scaling efficiency against
// one replica: rate(N) / (N * rate(1)) on CPU replicas of their own cores, rate(N) / rate(1) for logical GPUs,
// which share one GPU and can at best keep its throughput. An untimed run of one replica comes first, so one-time
// costs do not fall on the first configuration.
//   bench_distribute_scaling [cpu|gpu] [replica counts=1,2,4] [batch_per_replica=64] [steps=30] [warmup=5]
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_convnet.h"

using namespace tower;

namespace {

std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::max(1, std::atoi(item.c_str())));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "cpu";
  const std::vector<int> counts = parse_counts(argc > 2 ? argv[2] : "1,2,4");
  const Index per_replica = argc > 3 ? std::atoi(argv[3]) : 64;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 30;
  const int warmup = argc > 5 ? std::atoi(argv[5]) : 5;
  if (kind != "cpu" && kind != "gpu") {
    std::fprintf(stderr, "usage: bench_distribute_scaling [cpu|gpu] [counts] [batch_per_replica] [steps] [warmup]\n");
    return 2;
  }
  if (kind == "gpu" && cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_distribute_scaling: no GPU is visible\n");
    return 1;
  }
  int most = 1;
  for (int n : counts) most = std::max(most, n);
  if (kind == "gpu") distribute::set_logical_gpus_per_gpu(most);
  // Examples per second of n replicas over `timed` steps, after `warm` untimed ones.
  const auto rate_of = [&](int n, int warm, int timed, std::string& ops) {
    std::vector<std::string> devices;
    for (int r = 0; r < n; ++r) devices.push_back(kind + ":" + std::to_string(r));
    distribute::MirroredStrategy strategy(devices);
    ops = n > 1 ? strategy.cross_device_ops()->name() : "none";
    Model model = [&] {
      auto scope = strategy.scope();
      Model m = bench::batch_norm_convnet();
      m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
      return m;
    }();
    const Index batch = per_replica * n;
    const Tensor x = Tensor::zeros(Shape{batch, 28, 28, 1});
    Tensor y = Tensor::zeros(Shape{batch}, DType::int32);
    for (Index i = 0; i < batch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
    for (int s = 0; s < warm; ++s) model.train_on_batch(x, y);
    const auto start = std::chrono::steady_clock::now();
    // train_on_batch returns the loss, read from the device: each step has finished when it returns.
    for (int s = 0; s < timed; ++s) model.train_on_batch(x, y);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return timed > 0 ? static_cast<double>(batch) * timed / seconds : 0.0;
  };
  std::string ops;
  // One-time costs (kernel selection, library plans, the allocator's first blocks) fall on this untimed run.
  rate_of(1, warmup, 0, ops);
  double one_replica = 0;
  for (int n : counts) {
    const double rate = rate_of(n, warmup, steps, ops);
    if (n == 1 && one_replica == 0) one_replica = rate;
    const double ideal = kind == "cpu" ? n * one_replica : one_replica;
    std::printf("{\"device\": \"%s\", \"replicas\": %d, \"cross_device_ops\": \"%s\", \"global_batch\": %lld, "
                "\"examples_per_sec\": %.1f, \"scaling_efficiency\": %s}\n",
                kind.c_str(), n, ops.c_str(), static_cast<long long>(per_replica * n), rate,
                one_replica > 0 ? std::to_string(rate / ideal).c_str() : "null");
    std::fflush(stdout);
  }
  return 0;
}
