#include "distribute/multi_worker_mirrored_strategy.h"

#include <omp.h>

#include <cstdlib>
#include <stdexcept>

#include "api/backend/backend.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/in_process_all_reduce.h"

namespace tower::distribute {

namespace {

const char* const kWho = "MultiWorkerMirroredStrategy: ";

class MultiWorkerMirroredStrategyImpl final : public detail::StrategyImpl {
 public:
  MultiWorkerMirroredStrategyImpl(const CommunicationOptions& options,
                                  const std::optional<std::vector<std::string>>& devices)
      : devices_(devices ? parse_device_list(*devices, kWho) : default_devices()) {
    const std::string& impl = options.implementation;
    if (impl != "AUTO" && impl != "RING" && impl != "NCCL")
      throw std::invalid_argument(std::string(kWho) + "unknown communication implementation '" + impl +
                                  "' (expected AUTO, RING or NCCL)");
    if (impl == "NCCL" && devices_[0].device.is_cpu())
      throw std::invalid_argument(std::string(kWho) + "NCCL communication needs GPU replicas; the replicas are on " +
                                  devices_[0].name + " (use AUTO or RING)");
    ops_ = InProcessAllReduce();
    ops_->check_devices(devices_, kWho);
    workers_ = detail::mpi_world(options.timeout_seconds, kWho);
    if (!std::getenv("TOWER_NUM_THREADS") && !std::getenv("OMP_NUM_THREADS"))
      backend::set_num_threads(std::max(1, omp_get_num_procs() / workers_->local_size()));
  }
  std::string type() const override { return "MultiWorkerMirroredStrategy"; }
  int num_replicas_in_sync() const override { return workers_->size() * static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  int num_workers() const override { return workers_->size(); }
  int worker_index() const override { return workers_->rank(); }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(model, devices_, ops_, workers_, kWho);
  }

 private:
  std::vector<LogicalDevice> devices_;
  CrossDeviceOpsPtr ops_;
  std::shared_ptr<detail::Communicator> workers_;
};

}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions communication_options,
                                                         std::optional<std::vector<std::string>> local_devices)
    : Strategy(std::make_shared<MultiWorkerMirroredStrategyImpl>(communication_options, local_devices)) {}

bool mpi_available() { return detail::mpi_built(); }

}  // namespace tower::distribute
