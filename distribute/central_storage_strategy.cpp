#include "distribute/central_storage_strategy.h"

#include "api/models/model.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/reduction_to_one_device.h"

namespace tower::distribute {

namespace {

const char* const kWho = "CentralStorageStrategy: ";

// The given device's memory, else the one device every compute device computes on, else the host.
Device parameter_memory(const std::optional<std::string>& name, const std::vector<LogicalDevice>& compute) {
  if (name) return parse_logical_device(*name, kWho).device;
  for (const LogicalDevice& d : compute)
    if (d.device != compute[0].device) return Device::cpu();
  return compute[0].device;
}

class CentralStorageStrategyImpl final : public detail::StrategyImpl {
 public:
  CentralStorageStrategyImpl(const std::optional<std::vector<std::string>>& compute_devices,
                             const std::optional<std::string>& parameter_device, CentralStorageStrategyOptions options)
      : devices_(compute_devices ? parse_device_list(*compute_devices, kWho) : default_devices()),
        parameter_device_(parameter_memory(parameter_device, devices_)), options_(options) {
    ops_->check_devices(devices_, kWho);
  }
  std::string type() const override { return "CentralStorageStrategy"; }
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  Device parameter_device() const { return parameter_device_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(
        model, devices_, ops_, nullptr, kWho, detail::kDefaultBucketCapBytes, false, false,
        detail::CentralStorage{.parameter_device = parameter_device_, .read_copies = options_.read_copies});
  }

 private:
  std::vector<LogicalDevice> devices_;
  Device parameter_device_;
  CentralStorageStrategyOptions options_;
  CrossDeviceOpsPtr ops_ = ReductionToOneDevice();
};

}  // namespace

CentralStorageStrategy::CentralStorageStrategy(std::optional<std::vector<std::string>> compute_devices,
                                               std::optional<std::string> parameter_device,
                                               CentralStorageStrategyOptions options)
    : Strategy(std::make_shared<CentralStorageStrategyImpl>(compute_devices, parameter_device, options)) {}

CentralStorageStrategy::CentralStorageStrategy(std::vector<std::string> compute_devices,
                                               std::optional<std::string> parameter_device,
                                               CentralStorageStrategyOptions options)
    : CentralStorageStrategy(std::optional<std::vector<std::string>>(std::move(compute_devices)),
                             std::move(parameter_device), options) {}

Device CentralStorageStrategy::parameter_device() const {
  return static_cast<const CentralStorageStrategyImpl&>(*impl()).parameter_device();
}

}  // namespace tower::distribute
