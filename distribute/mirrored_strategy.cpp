#include "distribute/mirrored_strategy.h"

#include <stdexcept>

#include "distribute/detail/mirrored_replicas.h"

namespace tower::distribute {

namespace {

const char* const kWho = "MirroredStrategy: ";

class MirroredStrategyImpl final : public detail::StrategyImpl {
 public:
  MirroredStrategyImpl(const std::optional<std::vector<std::string>>& devices, CrossDeviceOpsPtr ops,
                       MirroredStrategyOptions options)
      : devices_(devices ? parse_device_list(*devices, kWho) : default_devices()),
        ops_(ops ? std::move(ops) : default_cross_device_ops(devices_)), options_(options) {
    if (options_.bucket_cap_bytes == 0)
      throw std::invalid_argument(std::string(kWho) + "bucket_cap_bytes must be at least 1");
    ops_->check_devices(devices_, kWho);
  }
  std::string type() const override { return "MirroredStrategy"; }
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  const CrossDeviceOpsPtr& ops() const { return ops_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(model, devices_, ops_, nullptr, kWho, options_.bucket_cap_bytes,
                                              options_.mirror_variables);
  }

 private:
  std::vector<LogicalDevice> devices_;
  CrossDeviceOpsPtr ops_;
  MirroredStrategyOptions options_;
};

}  // namespace

MirroredStrategy::MirroredStrategy(std::optional<std::vector<std::string>> devices, CrossDeviceOpsPtr cross_device_ops,
                                   MirroredStrategyOptions options)
    : Strategy(std::make_shared<MirroredStrategyImpl>(devices, std::move(cross_device_ops), options)) {}

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices, CrossDeviceOpsPtr cross_device_ops,
                                   MirroredStrategyOptions options)
    : MirroredStrategy(std::optional<std::vector<std::string>>(std::move(devices)), std::move(cross_device_ops),
                       options) {}

const CrossDeviceOpsPtr& MirroredStrategy::cross_device_ops() const {
  return static_cast<const MirroredStrategyImpl&>(*impl()).ops();
}

}  // namespace tower::distribute
