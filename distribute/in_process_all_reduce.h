#pragma once
// InProcessAllReduce: the default for CPU replicas. After a barrier, replica r of k sums chunk r of the
// gradient buffer (the k replicas' values, in replica order) into the result, so the reduction runs on all k
// replica threads at once and every element is added in the same order whatever the timing.
#include "distribute/cross_device_ops.h"

namespace tower::distribute {

struct InProcessAllReduceOptions {};

class InProcessAllReduceImpl final : public CrossDeviceOps {
 public:
  using Options = InProcessAllReduceOptions;
  explicit InProcessAllReduceImpl(Options = {}) : CrossDeviceOps("InProcessAllReduce") {}
  // Requires CPU devices.
  void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const override;
  void reduce(int r, int k, float* const* parts, float* out, Index count, const std::vector<LogicalDevice>& devices,
              detail::Barrier& barrier) const override;
};

class InProcessAllReduce : public CrossDeviceOpsHolder<InProcessAllReduceImpl> {
 public:
  using CrossDeviceOpsHolder::CrossDeviceOpsHolder;
};

}  // namespace tower::distribute
