#include "distribute/one_device_strategy.h"

#include "distribute/detail/mirrored_replicas.h"
#include "distribute/in_process_all_reduce.h"

namespace tower::distribute {

namespace {

class OneDeviceStrategyImpl final : public detail::StrategyImpl {
 public:
  explicit OneDeviceStrategyImpl(const std::string& device)
      : devices_{parse_logical_device(device, "OneDeviceStrategy: ")} {}
  std::string type() const override { return "OneDeviceStrategy"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
    return std::make_unique<detail::MirroredReplicas>(model, devices_, InProcessAllReduce(), nullptr,
                                                      "OneDeviceStrategy: ");
  }

 private:
  std::vector<LogicalDevice> devices_;
};

}  // namespace

OneDeviceStrategy::OneDeviceStrategy(const std::string& device)
    : Strategy(std::make_shared<OneDeviceStrategyImpl>(device)) {}

}  // namespace tower::distribute
