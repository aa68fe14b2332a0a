#pragma once
// HierarchicalCopyAllReduce (tf.distribute.HierarchicalCopyAllReduce): the replicas form two groups, the first
// ceil(k / 2) and the rest; each group sums its members' gradients (the group's threads in parallel, each on a
// chunk), then, after a barrier, all k threads add the second group's sum to the first's. TensorFlow made it for
// machines of two groups of four GPUs; on CPU replicas it gives the same sums in another order of additions. On
// GPUs each group's first replica sums its group on its GPU (device copies and the backend's add kernel), and
// after the barrier the first replica adds the second group's sum into its own.
#include "distribute/cross_device_ops.h"

namespace tower::distribute {

struct HierarchicalCopyAllReduceOptions {};

class HierarchicalCopyAllReduceImpl final : public CrossDeviceOps {
 public:
  using Options = HierarchicalCopyAllReduceOptions;
  explicit HierarchicalCopyAllReduceImpl(Options = {}) : CrossDeviceOps("HierarchicalCopyAllReduce") {}
  // Accepts any devices.
  void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const override;
  void reduce(int r, int k, float* const* parts, float* out, Index count, const std::vector<LogicalDevice>& devices,
              detail::Barrier& barrier) const override;

 private:
  void reduce_on_gpus(int r, int k, int g, float* const* parts, float* out, Index count,
                      const std::vector<LogicalDevice>& devices, detail::Barrier& barrier) const;
};

class HierarchicalCopyAllReduce : public CrossDeviceOpsHolder<HierarchicalCopyAllReduceImpl> {
 public:
  using CrossDeviceOpsHolder::CrossDeviceOpsHolder;
};

}  // namespace tower::distribute
