#include "distribute/ps_cluster_testing.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "distribute/replica_testing.h"

namespace tower::testing {

namespace fs = std::filesystem;

Model cluster_convnet() {
  set_random_seed(kClusterSeed);
  return testing::small_convnet(false, false);
}

optimizers::OptimizerPtr cluster_optimizer(const std::string& scenario) {
  if (scenario == "adam") return optimizers::Adam(1e-3);
  return optimizers::SGD(0.1);
}

data::Dataset cluster_examples(Index count, std::uint64_t seed) {
  const Examples e = seeded_examples(count, seed);
  return data::Dataset::from_tensor_slices({e.x, e.y}).batch(8);
}

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

const ClusterProcess& ClusterRun::get(const std::string& name) const {
  for (const ClusterProcess& p : processes)
    if (p.name == name) return p;
  throw std::out_of_range(name);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ClusterRun run_cluster(const fs::path& dir, const std::string& scenario, int workers, int ps,
                       const std::string& victim, double limit_seconds, const std::string& devices,
                       const std::function<void(const ClusterAddresses&)>& during) {
  std::vector<std::string> chief{"127.0.0.1:" + std::to_string(free_port())}, worker_addresses, ps_addresses;
  for (int i = 0; i < workers; ++i) worker_addresses.push_back("127.0.0.1:" + std::to_string(free_port()));
  for (int i = 0; i < ps; ++i) ps_addresses.push_back("127.0.0.1:" + std::to_string(free_port()));
  const auto list = [](const std::vector<std::string>& a) {
    std::string s = "[";
    for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", \"" : "\"") + a[i] + "\"";
    return s + "]";
  };
  const std::string cluster = "{\"chief\": " + list(chief) + ", \"worker\": " + list(worker_addresses) +
                              ", \"ps\": " + list(ps_addresses) + "}";
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  ClusterRun run;
  const auto start = std::chrono::steady_clock::now();
  const auto spawn = [&](const std::string& type, int index, pid_t victim_pid) {
    ClusterProcess p{type + std::to_string(index)};
    const std::string config = "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" + type + "\", \"index\": " +
                               std::to_string(index) + "}" + (devices.empty() ? "" : ", " + devices) + "}";
    const fs::path log = dir / (p.name + ".log");
    p.pid = fork();
    if (p.pid == 0) {
      setenv("TOWER_CONFIG", config.c_str(), 1);
      setenv("TOWER_TEST_PS_OUT", dir.c_str(), 1);
      setenv("TOWER_TEST_PS_SCENARIO", scenario.c_str(), 1);
      setenv("TOWER_TEST_PS_KILL_PID", std::to_string(victim_pid).c_str(), 1);
      if (during) setenv("TOWER_TEST_PS_GATE", (dir / "gate").c_str(), 1);
      setenv("OMP_NUM_THREADS", "1", 1);
      // Under AddressSanitizer the processes skip the leak check: gRPC keeps process-wide state until exit.
      if (const char* asan = std::getenv("ASAN_OPTIONS"); asan && *asan)
        setenv("ASAN_OPTIONS", (std::string(asan) + ":detect_leaks=0").c_str(), 1);
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f) dup2(fileno(stdout), fileno(stderr));
      const std::string filter = "--gtest_filter=ParameterServerRole.Run";
      execl(exe.c_str(), exe.c_str(), filter.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    run.processes.push_back(p);
  };
  for (int i = 0; i < ps; ++i) spawn("ps", i, 0);
  for (int i = 0; i < workers; ++i) spawn("worker", i, 0);
  pid_t victim_pid = 0;
  for (const ClusterProcess& p : run.processes)
    if (p.name == victim) victim_pid = p.pid;
  spawn("chief", 0, victim_pid);
  std::atomic<bool> ended{false};
  run.addresses = {chief, worker_addresses, ps_addresses, &ended, dir / "gate"};
  std::thread intruder;
  if (during) intruder = std::thread([&] { during(run.addresses); });
  std::size_t left = run.processes.size();
  while (left > 0) {
    for (ClusterProcess& p : run.processes) {
      int status = 0;
      if (p.status >= 0 || waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
      p.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      --left;
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left > 0 && run.seconds > limit_seconds) {
      run.timed_out = true;
      for (ClusterProcess& p : run.processes)
        if (p.status < 0) {
          kill(p.pid, SIGKILL);
          int status = 0;
          waitpid(p.pid, &status, 0);
          p.status = 128 + SIGKILL;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ended = true;
  if (intruder.joinable()) intruder.join();
  run.addresses.ended = nullptr;
  for (const ClusterProcess& p : run.processes)
    run.logs += "---- " + p.name + " (status " + std::to_string(p.status) + ")\n" + read_file(dir / (p.name + ".log"));
  return run;
}

std::map<std::string, std::vector<double>> read_report(const fs::path& file) {
  std::map<std::string, std::vector<double>> out;
  std::ifstream in(file);
  std::string key;
  double value;
  while (in >> key >> value) out[key].push_back(value);
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tower_ps_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void expect_every_process_ended_well(const ClusterRun& run, const std::string& killed) {
  ASSERT_FALSE(run.timed_out) << "the cluster did not end within its limit\n" << run.logs;
  for (const ClusterProcess& p : run.processes) {
    if (p.name == killed) EXPECT_EQ(p.status, 128 + SIGKILL) << p.name << "\n" << run.logs;
    else EXPECT_EQ(p.status, 0) << p.name << " failed\n" << run.logs;
  }
}

const Placement kCpuCluster{kOnTheCpu, "cpu:0 cpu", "cpu:0 cpu", 1e-5};
// The chief on its default device. cuDNN may run the convolutions in TF32 (cuda_conv2d.cpp), so 16 steps end
// within 1e-2 of the CPU's rather than 1e-5.
const Placement kGpuWorker{R"("worker_devices": "cuda:0")", "gpu:0 cuda:0", "gpu:0 cuda:0", 1e-2};

// The first line of a process's device report.
std::string device_report(const fs::path& dir, const std::string& process) {
  std::string line = read_file(dir / (process + ".device"));
  return line.substr(0, line.find('\n'));
}

// One worker: the parameter servers apply every step's gradients before the next step pulls, so the run is
// synchronous training, step for step; the reference trains in this process on the CPU.
void expect_one_worker_matches_one_process(const std::string& scenario, int ps, const Placement& where,
                                           const std::string& config,
                                           const std::function<void(const ClusterAddresses&)>& during,
                                           std::string* logs) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const fs::path dir = fresh_dir(scenario);
  const ClusterRun run = run_cluster(dir, scenario, 1, ps, "", 120, where.config + (config.empty() ? "" : ", " + config), during);
  if (logs) *logs = run.logs;
  expect_every_process_ended_well(run);
  ASSERT_TRUE(fs::exists(dir / "chief.weights")) << run.logs;
  const io::WeightsFile got = io::read_weights_file((dir / "chief.weights").string());
  EXPECT_EQ(device_report(dir, "worker0"), where.worker) << run.logs;
  EXPECT_EQ(device_report(dir, "chief0"), where.chief) << run.logs;
  for (int p = 0; p < ps; ++p) EXPECT_EQ(device_report(dir, "ps" + std::to_string(p)), "cpu:0 cpu") << run.logs;

  Model model = cluster_convnet();
  model.to(Device::cpu());
  model.compile(cluster_optimizer(scenario),
                losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  const callbacks::History want = model.fit(cluster_examples(64, 11), options);
  const std::vector<VariablePtr> vars = model.weights();
  ASSERT_EQ(got.weights.size(), vars.size());
  double worst = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const double d = relative_difference(got.weights[i].value, vars[i]->value);
    worst = std::max(worst, d);
    EXPECT_LE(d, where.bound) << "weight " << vars[i]->path << " differs from synchronous training";
  }
  // The initial weights moved: the comparison is not of two untrained models.
  EXPECT_GT(relative_difference(got.weights[0].value, cluster_convnet().weights()[0]->value), 1e-3);
  std::cout << "[ ParameterServer ] 1 worker on " << where.worker << ", " << ps << " parameter server(s), "
            << scenario << ": largest relative weight difference from synchronous training on the CPU " << worst
            << "\n";
  const auto report = read_report(dir / "chief.txt");
  ASSERT_EQ(report.at("loss").size(), 2u);
  for (std::size_t e = 0; e < 2; ++e)
    EXPECT_NEAR(report.at("loss")[e], want["loss"][e], where.bound * std::fabs(want["loss"][e])) << "epoch " << e;
  EXPECT_EQ(report.at("batches")[0], 16);
  EvaluateOptions eval;
  eval.verbose = 0;
  const double evaluated = *model.evaluate(cluster_examples(64, 11), eval).get("loss");
  ASSERT_TRUE(report.count("evaluate_loss")) << run.logs;
  EXPECT_NEAR(report.at("evaluate_loss")[0], evaluated, where.bound * std::fabs(evaluated)) << "the chief's evaluate";
  fs::remove_all(dir);
}

}  // namespace tower::testing
