#pragma once
// NcclAllReduce (tf.distribute.NcclAllReduce): the default for GPU replicas, one NCCL all-reduce of the flat
// gradient buffer per step. It accepts GPU devices only. Replicas on GPUs need Tower's CUDA backend, which this
// build does not have yet, so a strategy refuses GPU devices before any reduction: check_devices is the part
// that works today, and reduce() throws.
#include "distribute/cross_device_ops.h"

namespace tower::distribute {

struct NcclAllReduceOptions {
  int num_packs = 1;  // as TensorFlow's: >= 1
};

class NcclAllReduceImpl final : public CrossDeviceOps {
 public:
  using Options = NcclAllReduceOptions;
  // Throws std::invalid_argument for num_packs < 1.
  explicit NcclAllReduceImpl(Options options);
  const Options& options() const { return options_; }
  // Requires GPU devices; NCCL refuses two replicas on one GPU.
  void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const override;
  void reduce(int r, int k, float* const* parts, float* out, Index count, const std::vector<LogicalDevice>& devices,
              detail::Barrier& barrier) const override;

 private:
  Options options_;
};

class NcclAllReduce : public CrossDeviceOpsHolder<NcclAllReduceImpl> {
 public:
  using CrossDeviceOpsHolder::CrossDeviceOpsHolder;
};

}  // namespace tower::distribute
