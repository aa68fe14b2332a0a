#pragma once
// ReductionToOneDevice (tf.distribute.ReductionToOneDevice): the replica on reduce_to_device sums every
// replica's gradients alone, in replica order, while the others wait. reduce_to_device is one of the strategy's
// devices ("cpu:1"); empty means the first. When that replica has no rows in a step (a short last batch), the
// first replica does the sum. On GPUs that replica's thread adds the buffers with the backend's add kernel into
// `out`, on the first replica's GPU (device copies bring buffers of other GPUs there first).
#include "distribute/cross_device_ops.h"

namespace tower::distribute {

struct ReductionToOneDeviceOptions {
  std::string reduce_to_device;
};

class ReductionToOneDeviceImpl final : public CrossDeviceOps {
 public:
  using Options = ReductionToOneDeviceOptions;
  explicit ReductionToOneDeviceImpl(Options options);
  const Options& options() const { return options_; }
  // Requires reduce_to_device (when given) among the devices.
  void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const override;
  void reduce(int r, int k, float* const* parts, float* out, Index count, const std::vector<LogicalDevice>& devices,
              detail::Barrier& barrier) const override;

 private:
  Options options_;
};

class ReductionToOneDevice : public CrossDeviceOpsHolder<ReductionToOneDeviceImpl> {
 public:
  using CrossDeviceOpsHolder::CrossDeviceOpsHolder;
};

}  // namespace tower::distribute
