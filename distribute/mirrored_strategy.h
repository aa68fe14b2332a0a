#pragma once
// MirroredStrategy (tf.distribute.MirroredStrategy): synchronous training on several devices of one machine,
// one replica per device, gradients summed by cross_device_ops (see strategy.h for the semantics).
//
//   MirroredStrategy()                                 every visible GPU, else the CPU (one replica)
//   MirroredStrategy({"cpu:0", "cpu:1"})               two replicas on the host (TensorFlow's virtual CPUs)
//   MirroredStrategy({"gpu:0", "gpu:1"}, distribute::HierarchicalCopyAllReduce())
//
// devices: as in logical_device.h; none given (std::nullopt, the default) means every visible GPU, else "cpu:0".
// cross_device_ops: null (the default) means NcclAllReduce on GPUs, InProcessAllReduce on CPU devices.
//
// Throws std::invalid_argument, starting with "MirroredStrategy: ", for an empty device list, an unknown device
// (listing the available ones), a device listed twice, CPU and GPU devices mixed, or cross_device_ops that do
// not fit the devices. Replicas on GPUs need Tower's CUDA backend, which this build lacks: a model refuses to
// run on them.
//
// Each replica runs on its own thread with backend::num_threads() / replicas OpenMP threads (at least one).
#include <optional>
#include <string>
#include <vector>

#include "distribute/cross_device_ops.h"
#include "distribute/strategy.h"

namespace tower::distribute {

class MirroredStrategy : public Strategy {
 public:
  MirroredStrategy(std::optional<std::vector<std::string>> devices = std::nullopt,
                   CrossDeviceOpsPtr cross_device_ops = nullptr);
  // The same with a list: MirroredStrategy({"cpu:0", "cpu:1"}).
  MirroredStrategy(std::vector<std::string> devices, CrossDeviceOpsPtr cross_device_ops = nullptr);
  // The ops in use (the default ones when none were given).
  const CrossDeviceOpsPtr& cross_device_ops() const;
};

}  // namespace tower::distribute
