#include "distribute/multi_worker_mirrored_strategy.h"

#include <omp.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "api/backend/backend.h"
#include "api/models/fit_failure.h"
#include "distribute/detail/device_communicator.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/detail/worker_reduction.h"
#include "distribute/in_process_all_reduce.h"

namespace tower::distribute {

namespace {

const char* const kWho = "MultiWorkerMirroredStrategy: ";

class MultiWorkerMirroredStrategyImpl final : public detail::StrategyImpl, public tower::detail::FitFailureHandler {
 public:
  MultiWorkerMirroredStrategyImpl(const CommunicationOptions& options,
                                  const std::optional<std::vector<std::string>>& devices)
      : devices_(devices ? parse_device_list(*devices, kWho) : default_devices()) {
    // Checked before MPI starts, so a bad option is an error even without a launcher.
    const detail::WorkerReductionChoice choice =
        detail::choose_worker_reduction(devices_, options.implementation, detail::nccl_built(), kWho);
    ops_ = devices_[0].device.is_cpu() ? CrossDeviceOpsPtr(InProcessAllReduce()) : default_cross_device_ops(devices_);
    ops_->check_devices(devices_, kWho);
    workers_ = detail::mpi_world(options.timeout_seconds, kWho);
    // Every worker takes the same path: NCCL only when all of them can.
    nccl_ = detail::agree_on_nccl(*workers_, choice.kind == detail::WorkerReduction::nccl,
                                  options.implementation == "NCCL", kWho);
    if (workers_->rank() == 0 && !devices_[0].device.is_cpu())
      log_.write(std::cerr, std::string(kWho) + (nccl_ ? choice.reason
                                                         : "MPI between the workers: a worker cannot use NCCL") + "\n");
    if (!std::getenv("TOWER_NUM_THREADS") && !std::getenv("OMP_NUM_THREADS"))
      backend::set_num_threads(std::max(1, omp_get_num_procs() / workers_->local_size()));
  }
  std::string type() const override { return "MultiWorkerMirroredStrategy"; }
  int num_replicas_in_sync() const override { return workers_->size() * static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  int num_workers() const override { return workers_->size(); }
  int worker_index() const override { return workers_->rank(); }
  void fit_failed(const std::string& message) override {
    if (workers_->size() > 1)
      workers_->abort(std::string(kWho) + "worker " + std::to_string(workers_->rank()) + " of " +
                      std::to_string(workers_->size()) + ": fit failed, ending every worker: " + message);
  }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(model, devices_, ops_, workers_, kWho,
                                                      detail::kDefaultBucketCapBytes, false, nccl_);
  }

 private:
  std::vector<LogicalDevice> devices_;
  CrossDeviceOpsPtr ops_;
  std::shared_ptr<detail::Communicator> workers_;
  bool nccl_ = false;
  detail::OnceLog log_;
};

}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions communication_options,
                                                         std::optional<std::vector<std::string>> local_devices)
    : Strategy(std::make_shared<MultiWorkerMirroredStrategyImpl>(communication_options, local_devices)) {}

bool mpi_available() { return detail::mpi_built(); }

}  // namespace tower::distribute
