#include "distribute/central_storage_strategy.h"

#include <stdexcept>

#include "api/models/model.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/reduction_to_one_device.h"

namespace tower::distribute {

namespace {

const char* const kWho = "CentralStorageStrategy: ";

std::string device_names(const std::vector<LogicalDevice>& devices) {
  std::string names;
  for (const LogicalDevice& d : devices) names += (names.empty() ? "" : ", ") + d.name + " (" + d.device.to_string() + ")";
  return names;
}

// The one memory every compute device computes in; throws for devices on several physical GPUs.
Device compute_memory(const std::vector<LogicalDevice>& devices) {
  for (const LogicalDevice& d : devices)
    if (d.device != devices[0].device)
      throw std::invalid_argument(std::string(kWho) + "the compute devices " + device_names(devices) +
                                  " are on several physical GPUs; each would need its own copy of the variables read "
                                  "from the parameter device every step, which this build does not do (use "
                                  "MirroredStrategy, whose replicas on several GPUs hold mirrored variables)");
  return devices[0].device;
}

Device parameter_memory(const std::optional<std::string>& name, const std::vector<LogicalDevice>& compute) {
  const Device memory = compute_memory(compute);
  if (!name) return memory;
  const LogicalDevice given = parse_logical_device(*name, kWho);
  if (given.device != memory)
    throw std::invalid_argument(std::string(kWho) + "parameter_device '" + *name + "' (" + given.device.to_string() +
                                ") is not the memory the compute devices " + device_names(compute) +
                                " compute in (" + memory.to_string() + "); replicas read the variables where they "
                                "live, so the parameter device must be " + memory.to_string());
  return memory;
}

class CentralStorageStrategyImpl final : public detail::StrategyImpl {
 public:
  CentralStorageStrategyImpl(const std::optional<std::vector<std::string>>& compute_devices,
                             const std::optional<std::string>& parameter_device)
      : devices_(compute_devices ? parse_device_list(*compute_devices, kWho) : default_devices()),
        parameter_device_(parameter_memory(parameter_device, devices_)) {
    ops_->check_devices(devices_, kWho);
  }
  std::string type() const override { return "CentralStorageStrategy"; }
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  Device parameter_device() const { return parameter_device_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    // Every replica computes in the parameter device's memory, so the replica set shares the model's variables
    // there (no mirrored copies), and the first replica sums the gradients into a buffer of that memory.
    auto replicas = std::make_unique<detail::MirroredReplicas>(model, devices_, ops_, nullptr, kWho);
    if (replicas->mirrored())
      throw std::logic_error(std::string(kWho) + "the replicas of model '" + model.name() +
                             "' hold copies of the variables");
    return replicas;
  }

 private:
  std::vector<LogicalDevice> devices_;
  Device parameter_device_;
  CrossDeviceOpsPtr ops_ = ReductionToOneDevice();
};

}  // namespace

CentralStorageStrategy::CentralStorageStrategy(std::optional<std::vector<std::string>> compute_devices,
                                               std::optional<std::string> parameter_device)
    : Strategy(std::make_shared<CentralStorageStrategyImpl>(compute_devices, parameter_device)) {}

CentralStorageStrategy::CentralStorageStrategy(std::vector<std::string> compute_devices,
                                               std::optional<std::string> parameter_device)
    : CentralStorageStrategy(std::optional<std::vector<std::string>>(std::move(compute_devices)),
                             std::move(parameter_device)) {}

Device CentralStorageStrategy::parameter_device() const {
  return static_cast<const CentralStorageStrategyImpl&>(*impl()).parameter_device();
}

}  // namespace tower::distribute
