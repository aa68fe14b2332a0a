#pragma once
// NcclAllReduce (tf.distribute.NcclAllReduce): the default for GPU replicas each on a GPU of its own. One NCCL
// communicator per set of devices (made when the first reduction runs, one rank per replica), and per bucket one
// ncclAllReduce per replica, each replica's thread issuing its own on a stream beside its GPU's compute stream so
// that the sums overlap the rest of backward; end_reduction() joins the streams. Replica 0 receives the sum in
// `out`, the others in place. It accepts GPU devices only, each on a different physical GPU: NCCL refuses two
// ranks on one GPU, so logical GPUs of one GPU need ReductionToOneDevice or HierarchicalCopyAllReduce (the
// strategy's automatic choice there).
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "distribute/cross_device_ops.h"
#include "distribute/detail/device_communicator.h"

namespace tower::distribute {

struct NcclAllReduceOptions {
  int num_packs = 1;  // as TensorFlow's: >= 1
  // Makes the communicator over a step's devices; empty (the default) makes NCCL's. Any other communicator lifts
  // the GPU-only check: the tests run this op's logic on CPU replicas over detail::InProcessCommunicator.
  std::function<std::shared_ptr<detail::DeviceCommunicator>(const std::vector<LogicalDevice>&)> communicator;
};

class NcclAllReduceImpl final : public CrossDeviceOps {
 public:
  using Options = NcclAllReduceOptions;
  // Throws std::invalid_argument for num_packs < 1.
  explicit NcclAllReduceImpl(Options options);
  const Options& options() const { return options_; }
  // Requires GPU devices, no two on one physical GPU.
  void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const override;
  // Throws std::runtime_error when this build has no NCCL or NCCL fails.
  void reduce(int r, int k, float* const* parts, float* out, Index count, const std::vector<LogicalDevice>& devices,
              detail::Barrier& barrier) const override;
  void end_reduction(int r, const std::vector<LogicalDevice>& devices) const override;
  // ncclAllReduce writes the sum into every rank's buffer.
  bool sums_in_every_part() const override { return true; }

 private:
  // The communicator over the first k devices (a short last batch leaves fewer replicas in a step), made on
  // first use by whichever replica thread comes first, and kept.
  detail::DeviceCommunicator& communicator(int k, const std::vector<LogicalDevice>& devices) const;

  Options options_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<detail::DeviceCommunicator>> comms_;  // by device names
};

class NcclAllReduce : public CrossDeviceOpsHolder<NcclAllReduceImpl> {
 public:
  using CrossDeviceOpsHolder::CrossDeviceOpsHolder;
};

}  // namespace tower::distribute
