// ParameterServerStrategy with 2 workers against MirroredStrategy with 2 CPU replicas: examples per second of
// training the distribute benchmarks' convnet (bench_convnet.h), Adam 1e-3, on fixed random batches of
// batch_per_worker examples per worker (per replica under MirroredStrategy, whose global batch is twice that).
// Both run `steps` steps after a warm-up fit of 5 steps (plans, buffers, optimizer slots, connections); the
// parameter servers' rate counts the examples of all steps over the chief's fit, which includes every pull and
// push over gRPC and the parameter server's optimizer steps.
//
//   bench_parameter_server [steps=60] [batch_per_worker=64]
//
// Started without TOWER_CONFIG it starts the cluster itself, each process a copy of this program with one
// OpenMP thread on a free port of 127.0.0.1: one parameter server, two workers and the chief; then it runs
// MirroredStrategy on cpu:0 and cpu:1 (one thread each) in this process. Prints one JSON line per strategy and
// one with the ratio.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_convnet.h"

using namespace tower;

namespace {

constexpr int kWarmupSteps = 5;

data::Dataset random_batches(Index batch) {
  Generator g(7);
  const Index n = 8 * batch;
  std::vector<float> x(static_cast<std::size_t>(n * 28 * 28));
  for (float& v : x) v = g.uniform();
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (auto& v : y) v = static_cast<std::int32_t>(g.next_u64() % 10);
  return data::Dataset::from_tensor_slices({Tensor::from_vector(x, Shape{n, 28, 28, 1}),
                                            Tensor::from_vector(y, Shape{n})})
      .cache()
      .batch(batch);
}

Model compiled_convnet(const distribute::Strategy& strategy) {
  auto scope = strategy.scope();
  set_random_seed(1);
  Model m = bench::batch_norm_convnet();
  m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  return m;
}

// Fits `steps` steps after the warm-up; returns the timed fit's seconds.
double timed_fit(Model& model, const data::Dataset& data, int steps) {
  FitOptions options;
  options.verbose = 0;
  options.steps_per_epoch = kWarmupSteps;
  model.fit(data, options);
  options.steps_per_epoch = steps;
  const auto t0 = std::chrono::steady_clock::now();
  model.fit(data, options);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// This process's role in a cluster that the launcher below started.
int run_role(int steps, Index batch) {
  distribute::ParameterServerStrategy strategy;
  Model model = compiled_convnet(strategy);
  const double seconds = timed_fit(model, random_batches(batch), steps);
  if (strategy.is_chief())
    std::printf("%.6f\n", static_cast<double>(steps) * static_cast<double>(batch) / seconds);
  return 0;
}

// Starts the cluster and returns the chief's examples per second (0 when a process failed).
double run_cluster(const char* self, int steps, Index batch) {
  const std::string chief = "127.0.0.1:" + std::to_string(free_port());
  const std::string ps = "127.0.0.1:" + std::to_string(free_port());
  const std::string w0 = "127.0.0.1:" + std::to_string(free_port()), w1 = "127.0.0.1:" + std::to_string(free_port());
  const std::string cluster = "{\"chief\": [\"" + chief + "\"], \"worker\": [\"" + w0 + "\", \"" + w1 +
                              "\"], \"ps\": [\"" + ps + "\"]}";
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("tower_bench_ps_" + std::to_string(getpid()) + ".txt");
  std::vector<pid_t> pids;
  const auto spawn = [&](const std::string& type, int index) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string config = "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" + type +
                                 "\", \"index\": " + std::to_string(index) + "}}";
      setenv("TOWER_CONFIG", config.c_str(), 1);
      setenv("OMP_NUM_THREADS", "1", 1);
      if (type == "chief" && !std::freopen(out.c_str(), "w", stdout)) _exit(1);
      const std::string s = std::to_string(steps), b = std::to_string(batch);
      execl(self, self, s.c_str(), b.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  };
  spawn("ps", 0);
  spawn("worker", 0);
  spawn("worker", 1);
  spawn("chief", 0);
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  double rate = 0;
  std::ifstream(out) >> rate;
  std::filesystem::remove(out);
  return ok ? rate : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 60;
  const Index batch = argc > 2 ? std::atoi(argv[2]) : 64;
  if (std::getenv("TOWER_CONFIG")) return run_role(steps, batch);
  if (!distribute::grpc_available()) {
    std::fprintf(stderr, "bench_parameter_server: this build of Tower has no gRPC\n");
    return 77;
  }
  const double ps_rate = run_cluster(argv[0], steps, batch);
  if (ps_rate <= 0) {
    std::fprintf(stderr, "bench_parameter_server: the cluster failed\n");
    return 1;
  }
  backend::set_num_threads(2);  // one thread per replica
  distribute::MirroredStrategy mirrored({"cpu:0", "cpu:1"});
  Model model = compiled_convnet(mirrored);
  const double seconds = timed_fit(model, random_batches(2 * batch), steps);
  const double mirrored_rate = static_cast<double>(steps) * static_cast<double>(2 * batch) / seconds;
  std::printf("{\"config\": \"ParameterServerStrategy, 1 parameter server, 2 workers x 1 thread\", "
              "\"batch_per_worker\": %lld, \"steps\": %d, \"examples_per_sec\": %.1f}\n",
              static_cast<long long>(batch), steps, ps_rate);
  std::printf("{\"config\": \"MirroredStrategy, 2 CPU replicas x 1 thread\", \"global_batch\": %lld, \"steps\": %d, "
              "\"examples_per_sec\": %.1f}\n",
              static_cast<long long>(2 * batch), steps, mirrored_rate);
  std::printf("{\"parameter_server_vs_mirrored\": %.4f}\n", ps_rate / mirrored_rate);
  return 0;
}
