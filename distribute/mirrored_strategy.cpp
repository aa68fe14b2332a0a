#include "distribute/mirrored_strategy.h"

#include "distribute/detail/mirrored_replicas.h"

namespace tower::distribute {

namespace {

const char* const kWho = "MirroredStrategy: ";

class MirroredStrategyImpl final : public detail::StrategyImpl {
 public:
  MirroredStrategyImpl(const std::optional<std::vector<std::string>>& devices, CrossDeviceOpsPtr ops)
      : devices_(devices ? parse_device_list(*devices, kWho) : default_devices()),
        ops_(ops ? std::move(ops) : default_cross_device_ops(devices_)) {
    ops_->check_devices(devices_, kWho);
  }
  std::string type() const override { return "MirroredStrategy"; }
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  const CrossDeviceOpsPtr& ops() const { return ops_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(model, devices_, ops_, nullptr, kWho);
  }

 private:
  std::vector<LogicalDevice> devices_;
  CrossDeviceOpsPtr ops_;
};

}  // namespace

MirroredStrategy::MirroredStrategy(std::optional<std::vector<std::string>> devices, CrossDeviceOpsPtr cross_device_ops)
    : Strategy(std::make_shared<MirroredStrategyImpl>(devices, std::move(cross_device_ops))) {}

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices, CrossDeviceOpsPtr cross_device_ops)
    : MirroredStrategy(std::optional<std::vector<std::string>>(std::move(devices)), std::move(cross_device_ops)) {}

const CrossDeviceOpsPtr& MirroredStrategy::cross_device_ops() const {
  return static_cast<const MirroredStrategyImpl&>(*impl()).ops();
}

}  // namespace tower::distribute
