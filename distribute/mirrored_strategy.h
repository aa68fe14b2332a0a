#pragma once
// MirroredStrategy (tf.distribute.MirroredStrategy): synchronous training on several devices of one machine,
// one replica per device, gradients summed by cross_device_ops (see strategy.h for the semantics).
//
//   MirroredStrategy()                                 every visible GPU, else the CPU (one replica)
//   MirroredStrategy({"cpu:0", "cpu:1"})               two replicas on the host (TensorFlow's virtual CPUs)
//   MirroredStrategy({"gpu:0", "gpu:1"}, distribute::HierarchicalCopyAllReduce())
//   TOWER_LOGICAL_GPUS=4 ./train  ->  MirroredStrategy() has four replicas on the one GPU (logical GPUs)
//
// devices: as in logical_device.h; none given (std::nullopt, the default) means every logical GPU (each visible
// GPU, or its logical GPUs), else "cpu:0".
// cross_device_ops: null (the default) means choose_cross_device_ops(devices): InProcessAllReduce on CPU devices,
// NcclAllReduce on GPUs of their own, ReductionToOneDevice on logical GPUs of one GPU (said once on stderr).
// options: the gradient buckets' size (PyTorch DDP's bucket_cap_mb): gradients are summed across replicas in
// buckets of about this many bytes, each as soon as backward has produced it.
//
// Throws std::invalid_argument, starting with "MirroredStrategy: ", for an empty device list, an unknown device
// (listing the available ones), a device listed twice, CPU and GPU devices mixed, cross_device_ops that do not fit
// the devices, or a bucket cap of 0. Replicas on logical GPUs of one physical GPU (or on CPU devices) share the
// model's weights; replicas on several physical GPUs each hold their own copy of every variable (mirrored
// variables: the first replica's copy is the model's own; the others are made from it, updated by the same
// optimizer step with the same summed gradients, and BatchNormalization's moving statistics are the first
// replica's, copied to the others after every step).
//
// Each replica runs on its own thread with backend::num_threads() / replicas OpenMP threads (at least one).
#include <optional>
#include <string>
#include <vector>

#include "distribute/cross_device_ops.h"
#include "distribute/detail/gradient_buckets.h"
#include "distribute/strategy.h"

namespace tower::distribute {

struct MirroredStrategyOptions {
  std::size_t bucket_cap_bytes = detail::kDefaultBucketCapBytes;  // 25 MiB, as DDP's default
  // Every replica holds its own copy of the variables even where replicas could share them (CPU devices, logical
  // GPUs of one GPU), exactly as replicas on several physical GPUs always do (mirrored variables, see
  // detail/mirrored_replicas.h). For tests: it proves on the CPU what GPUs run.
  bool mirror_variables = false;
};

class MirroredStrategy : public Strategy {
 public:
  MirroredStrategy(std::optional<std::vector<std::string>> devices = std::nullopt,
                   CrossDeviceOpsPtr cross_device_ops = nullptr, MirroredStrategyOptions options = {});
  // The same with a list: MirroredStrategy({"cpu:0", "cpu:1"}).
  MirroredStrategy(std::vector<std::string> devices, CrossDeviceOpsPtr cross_device_ops = nullptr,
                   MirroredStrategyOptions options = {});
  // The ops in use (the default ones when none were given).
  const CrossDeviceOpsPtr& cross_device_ops() const;
};

}  // namespace tower::distribute
