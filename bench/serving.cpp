// Serving latency and throughput of Tower's inference calls (Model::predict_on_batch) on the CPU, for
// bench/serving.sh, which times ONNX Runtime and PyTorch on the same models with the same weights in the same run
// (bench/serving_reference.py). Models: Keras' MobileNetV2 (224x224x3, alpha 1.0, 1000 classes) and the
// Fashion-MNIST convnet of bench_convnet.h (28x28x1), both with random weights from fixed seeds, their
// BatchNormalization statistics and scales drawn too (fresh layers have mean 0, variance 1: an identity that would
// let a wrong epsilon or a swapped statistic pass the comparison with PyTorch).
//
//   bench_serving dump DIR
//     writes DIR/<model>.weights.h5 (Keras 3's layout), DIR/<model>_input.npy ([1, H, W, C], NHWC) and
//     DIR/<model>_output.npy (Tower's predict_on_batch of that input) for both models, and prints one JSON line per
//     model with its batch-1 plan's activation bytes (Plan::unshared_bytes, what caller_thread_bytes compares).
//   bench_serving bench [calls=1000] [throughput_calls=200] [models=mobilenet_v2,convnet] [configs=default,0,max]
//     for each model and each caller_thread_bytes setting (default: InferenceOptions' 2 MiB; 0: every call on
//     backend::num_threads() threads; max: every call on the calling thread alone): the latency of `calls`
//     batch-1 calls one after another (median, p99, mean), then the throughput of 1, 2 and 4 client threads
//     calling the one Model at batch 1, `throughput_calls` calls in all per client count (after warm-up calls on
//     the same threads). One JSON line each. Every measurement runs on threads of its own that end after it: a
//     thread that ran a multi-threaded call keeps its OpenMP pool while it lives, and slows every other caller's
//     (bench/RESULTS.md, "Serving latency").
//     cpu_util is (user + system CPU time) / wall time over the measurement: about 1 for a call on one thread,
//     about OMP_NUM_THREADS when the kernels' threads run (or spin at their barriers).
#include <tower/tower.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_convnet.h"
#include "bench_stats.h"

using namespace tower;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Bench {
  std::string name;
  Model model;
  Shape input_shape;  // one example, NHWC
  std::uint64_t input_seed;
  float low, high;  // input range
};

// Keras' initialisers leave BatchNormalization at gamma 1, beta 0, mean 0, variance 1; draw them instead.
void draw_batch_norm_statistics(Model& model, std::uint64_t seed) {
  Generator g(seed);
  std::vector<VariablePtr> vars = model.weights();
  std::vector<Tensor> values = model.get_weights();
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const std::string& n = vars[i]->name;
    float low = 0, high = 0;
    if (n == "gamma") low = 0.5f, high = 1.5f;
    else if (n == "beta" || n == "moving_mean") low = -0.2f, high = 0.2f;
    else if (n == "moving_variance") low = 0.5f, high = 2.0f;
    else continue;
    Tensor& t = values[i];
    float* p = t.data<float>();
    for (Index k = 0; k < t.numel(); ++k) p[k] = g.uniform(low, high);
  }
  model.set_weights(values);
}

Bench make_bench(const std::string& name) {
  set_random_seed(1);
  if (name == "mobilenet_v2") {
    Model m = applications::MobileNetV2({.input_shape = {224, 224, 3}, .alpha = 1.0, .classes = 1000, .weights = ""});
    draw_batch_norm_statistics(m, 11);
    return {name, m, Shape{224, 224, 3}, 21, -1.f, 1.f};
  }
  if (name == "convnet") {
    Model m = bench::batch_norm_convnet();
    draw_batch_norm_statistics(m, 12);
    return {name, m, Shape{28, 28, 1}, 22, 0.f, 1.f};
  }
  throw std::invalid_argument("bench_serving: unknown model '" + name + "' (mobilenet_v2, convnet)");
}

Tensor make_input(const Bench& b, Index batch) {
  Generator g(b.input_seed);
  const Index per = b.input_shape.numel();
  std::vector<float> v(static_cast<std::size_t>(batch * per));
  for (float& x : v) x = g.uniform(b.low, b.high);
  return Tensor::from_vector(v, Shape{batch, b.input_shape[0], b.input_shape[1], b.input_shape[2]});
}

// NumPy's .npy format, version 1.0, little-endian float32, C order.
void write_npy(const std::string& path, const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::string shape = "(";
  for (int d = 0; d < host.rank(); ++d) shape += std::to_string(host.dim(d)) + (host.rank() == 1 || d + 1 < host.rank() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("bench_serving: cannot write " + path);
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(host.data<float>()), static_cast<std::streamsize>(host.nbytes()));
  if (!out) throw std::runtime_error("bench_serving: writing " + path + " failed");
}

std::size_t batch1_plan_bytes(const Bench& b) {
  PlanOptions o;
  o.batch_size = 1;
  const Plan plan(b.model.impl(), o);
  return plan.unshared_bytes();
}

int dump(const std::string& dir) {
  for (const std::string name : {"mobilenet_v2", "convnet"}) {
    Bench b = make_bench(name);
    b.model.save_weights(dir + "/" + name + ".weights.h5");
    const Tensor x = make_input(b, 1);
    const Tensor y = b.model.predict_on_batch(x);
    write_npy(dir + "/" + name + "_input.npy", x);
    write_npy(dir + "/" + name + "_output.npy", y);
    double sum = 0;
    for (Index i = 0; i < y.numel(); ++i) sum += y.data<float>()[i];
    std::printf("{\"framework\": \"tower\", \"model\": \"%s\", \"measure\": \"plan\", \"batch\": 1, "
                "\"activation_bytes\": %zu, \"params\": %lld, \"output_sum\": %.6f, \"threads\": %d}\n",
                name.c_str(), batch1_plan_bytes(b), static_cast<long long>(b.model.count_params()), sum,
                backend::num_threads());
    std::fflush(stdout);
  }
  return 0;
}

struct Config {
  std::string name;
  std::size_t bytes;
};

Config parse_config(const std::string& s) {
  if (s == "default") return {"default(" + std::to_string(InferenceOptions{}.caller_thread_bytes) + ")",
                              InferenceOptions{}.caller_thread_bytes};
  if (s == "max") return {"max", std::numeric_limits<std::size_t>::max()};
  return {s, static_cast<std::size_t>(std::stoull(s))};
}

constexpr int kMaxClients = 4;

// The threads of this process now (OpenMP's pools included).
int os_threads() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

void latency(const Bench& b, const Config& c, const Tensor& x, int calls) {
  const int threads_before = os_threads();
  for (int i = 0; i < std::max(20, calls / 20); ++i) (void)b.model.predict_on_batch(x);  // warm-up
  std::vector<double> ms(static_cast<std::size_t>(calls));
  const double cpu0 = cpu_seconds();
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < calls; ++i) {
    const Clock::time_point s = Clock::now();
    const Tensor y = b.model.predict_on_batch(x);
    ms[static_cast<std::size_t>(i)] = 1e3 * seconds_since(s);
  }
  const double wall = seconds_since(t0), cpu = cpu_seconds() - cpu0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double p99 = sorted[static_cast<std::size_t>(std::ceil(0.99 * calls)) - 1];
  double mean = 0;
  for (double v : ms) mean += v / calls;
  std::printf("{\"framework\": \"tower\", \"model\": \"%s\", \"config\": \"ctb=%s\", \"measure\": \"latency\", "
              "\"batch\": 1, \"calls\": %d, \"median_ms\": %.4f, \"p99_ms\": %.4f, \"mean_ms\": %.4f, "
              "\"cpu_util\": %.2f, \"threads\": %d, \"os_threads\": [%d, %d]}\n",
              b.name.c_str(), c.name.c_str(), calls, bench::median(ms), p99, mean, cpu / wall, backend::num_threads(),
              threads_before, os_threads());
  std::fflush(stdout);
}

// `clients` threads call predict_on_batch on the one model: `warm_up` calls each (each client's plan is made),
// then, all starting together, `per_client` timed calls each.
double run_clients(const Bench& b, const Tensor& x, int clients, int warm_up, int per_client, double* cpu_util) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < warm_up; ++i) (void)b.model.predict_on_batch(x);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < per_client; ++i) (void)b.model.predict_on_batch(x);
    });
  while (ready.load() < clients) std::this_thread::yield();
  const double cpu0 = cpu_seconds();
  const Clock::time_point t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  const double wall = seconds_since(t0);
  if (cpu_util) *cpu_util = (cpu_seconds() - cpu0) / wall;
  return wall;
}

void throughput(const Bench& b, const Config& c, const Tensor& x, int total) {
  for (int clients : {1, 2, 4}) {
    const int per_client = std::max(1, total / clients);
    double util = 0;
    const double wall = run_clients(b, x, clients, std::max(5, per_client / 10), per_client, &util);
    std::printf("{\"framework\": \"tower\", \"model\": \"%s\", \"config\": \"ctb=%s\", \"measure\": \"throughput\", "
                "\"batch\": 1, \"clients\": %d, \"calls\": %d, \"calls_per_s\": %.2f, \"cpu_util\": %.2f, "
                "\"threads\": %d}\n",
                b.name.c_str(), c.name.c_str(), clients, clients * per_client, clients * per_client / wall, util,
                backend::num_threads());
    std::fflush(stdout);
  }
}

int bench_all(int calls, int throughput_calls, const std::vector<std::string>& models,
              const std::vector<std::string>& configs) {
  for (const std::string& name : models) {
    Bench b = make_bench(name);
    const Tensor x = make_input(b, 1);
    for (const std::string& cs : configs) {
      const Config c = parse_config(cs);
      // One plan per client thread, so 4 clients run 4 calls at once as ONNX Runtime's and PyTorch's do.
      b.model->set_inference_options({.plans_per_shape = kMaxClients, .max_shapes = 16, .caller_thread_bytes = c.bytes});
      // On a thread of its own, as the clients below: each thread that runs the CPU kernels on several threads
      // keeps an OpenMP pool of its own while it lives, and the pool of a thread that goes on living (this one)
      // would make every later call's pool wait with throttled spinning (more OpenMP threads than cores).
      std::thread([&] { latency(b, c, x, calls); }).join();
      if (throughput_calls > 0) throughput(b, c, x, throughput_calls);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "bench";
    if (mode == "dump") {
      if (argc < 3) throw std::invalid_argument("usage: bench_serving dump DIR");
      return dump(argv[2]);
    }
    if (mode == "bench") {
      const int calls = argc > 2 ? std::atoi(argv[2]) : 1000;
      const int throughput_calls = argc > 3 ? std::atoi(argv[3]) : 200;
      const std::vector<std::string> models = split(argc > 4 ? argv[4] : "mobilenet_v2,convnet");
      const std::vector<std::string> configs = split(argc > 5 ? argv[5] : "default,0,max");
      if (calls < 1) throw std::invalid_argument("bench_serving: calls must be at least 1");
      return bench_all(calls, throughput_calls, models, configs);
    }
    throw std::invalid_argument("usage: bench_serving dump DIR | bench [calls] [throughput_calls] [models] [configs]");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_serving: %s\n", e.what());
    return 1;
  }
}
