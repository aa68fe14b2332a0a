#pragma once
// Shared by the ParameterServerStrategy tests: clusters of real processes on this machine (ports chosen free on
// 127.0.0.1), each process this test binary's ParameterServerRole.Run in its role
// (parameter_server_strategy_test.cpp), and the comparison of a one-worker cluster with synchronous training.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tower/tower.h"

namespace tower::testing {

inline constexpr std::uint64_t kClusterSeed = 4242;

// The models, optimizers and data of the clusters' scenarios ("sgd", "adam", "kill_worker", ...).
Model cluster_convnet();
optimizers::OptimizerPtr cluster_optimizer(const std::string& scenario);
data::Dataset cluster_examples(Index count, std::uint64_t seed);

int free_port();

struct ClusterProcess {
  std::string name;  // "ps0", "worker1", "chief0"
  int pid = -1;
  int status = -1;  // exit status, or 128 + signal
};

struct ClusterAddresses {
  std::vector<std::string> chief, worker, ps;  // "127.0.0.1:port"
  const std::atomic<bool>* ended = nullptr;    // during run_cluster: true once every process has ended
  std::filesystem::path gate;  // with `during`: the chief waits after its first step (30 s at most) for this file
};

struct ClusterRun {
  ClusterAddresses addresses;
  std::vector<ClusterProcess> processes;
  double seconds = 0;
  bool timed_out = false;
  std::string logs;  // every process's output
  const ClusterProcess& get(const std::string& name) const;
};

std::string read_file(const std::filesystem::path& p);

// TOWER_CONFIG's keys that put every worker and the chief on the CPU, whatever GPUs the machine has.
inline const std::string kOnTheCpu = R"("worker_devices": "cpu:0", "chief_device": "cpu:0")";

// Starts `workers` workers, `ps` parameter servers and the chief, each this binary's ParameterServerRole.Run,
// and waits for all (killing them after limit_seconds). `victim` ("worker1", "ps1") is the process whose pid the
// chief gets to kill at its 5th batch. `config` is added to every TOWER_CONFIG beside "cluster" and "task".
// `during`, when given, runs on a thread of this process while the cluster runs, with its addresses; the chief
// waits after its first step until `during` creates the file `gate`, and `during` should return soon after `ended`
// turns true.
ClusterRun run_cluster(const std::filesystem::path& dir, const std::string& scenario, int workers, int ps,
                       const std::string& victim, double limit_seconds, const std::string& config = kOnTheCpu,
                       const std::function<void(const ClusterAddresses&)>& during = {});

std::map<std::string, std::vector<double>> read_report(const std::filesystem::path& file);
std::filesystem::path fresh_dir(const std::string& name);
void expect_every_process_ended_well(const ClusterRun& run, const std::string& killed = "");

// Where a cluster computes: the TOWER_CONFIG keys choosing the devices, what the worker and the chief then report
// ("<compute device> <device of the model's weights>"), and how far from synchronous training on the CPU it may end.
struct Placement {
  std::string config, worker, chief;
  double bound;
};
extern const Placement kCpuCluster;
extern const Placement kGpuWorker;

// The first line of a process's device report.
std::string device_report(const std::filesystem::path& dir, const std::string& process);

// One worker: the parameter servers apply every step's gradients before the next step pulls, so the run is
// synchronous training, step for step; the reference trains in this process on the CPU. `config` is added to
// the placement's TOWER_CONFIG keys; `during` runs while the cluster does (run_cluster); `logs`, when given,
// gets the processes' output.
void expect_one_worker_matches_one_process(const std::string& scenario, int ps, const Placement& where,
                                           const std::string& config = "",
                                           const std::function<void(const ClusterAddresses&)>& during = {},
                                           std::string* logs = nullptr);

}  // namespace tower::testing
