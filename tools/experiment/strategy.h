#pragma once
// The `strategy` section: how training is spread over devices.
//
//   default       one replica on the CPU (Tower's default device)
//   one_device    one replica on `device` ("cpu:0", "gpu:0", ...; see distribute/logical_device.h)
//   mirrored      one replica per device in `devices` (default: every GPU, else the CPU; "cpu:0", "cpu:1" are
//                 two replicas on the host), gradients summed with `cross_device_ops` (NcclAllReduce,
//                 HierarchicalCopyAllReduce, ReductionToOneDevice, InProcessAllReduce; default: NCCL on GPUs,
//                 ReductionToOneDevice on logical GPUs of one GPU, in-process on CPUs) in buckets of
//                 `bucket_cap_mb` MiB (25 by default)
//   multi_worker  one process per worker started by mpirun, with `communication` (auto, mpi, nccl)
//   central_storage  one replica per device in `compute_devices` (default as mirrored's), the variables in one
//                 place, `parameter_device` (default: the one GPU, else the host)
//
// The global batch is fit.batch_size_per_replica * num_replicas_in_sync().
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy.h"
#include "tools/experiment/experiment.h"

namespace tower::experiment {

struct StrategySpec {
  std::string type = "default";
  std::string device = "cpu:0";        // one_device
  std::vector<std::string> devices;    // mirrored; empty: every GPU, else the CPU
  std::string cross_device_ops;        // mirrored; empty: the strategy's choice
  double bucket_cap_mb = 25;           // mirrored: the gradient buckets' size in MiB
  std::string communication = "auto";  // multi_worker
  std::vector<std::string> compute_devices;  // central_storage; empty: every GPU, else the CPU
  std::string parameter_device;              // central_storage; empty: the strategy's choice
};

// Reads the (validated) section.
StrategySpec read_strategy(const Experiment& experiment);

// The strategy a run trains under: none for `default` (the model runs as it does without a strategy), else
// distribute's OneDeviceStrategy, MirroredStrategy, MultiWorkerMirroredStrategy or CentralStorageStrategy.
class RunStrategy {
 public:
  // Throws ExperimentError at the section when the strategy cannot be made here (an unknown device, ops that
  // do not fit the devices, no MPI launcher for multi_worker), with distribute's reason.
  explicit RunStrategy(const Experiment& experiment);
  const StrategySpec& spec() const { return spec_; }
  int num_replicas_in_sync() const;
  // False on every worker of a multi_worker strategy but the first, which alone writes the run directory.
  bool is_chief() const;
  // Runs `build` (making and compiling the model) inside the strategy's scope.
  void in_scope(const std::function<void()>& build) const;

 private:
  StrategySpec spec_;
  std::optional<distribute::Strategy> strategy_;
};

}  // namespace tower::experiment
