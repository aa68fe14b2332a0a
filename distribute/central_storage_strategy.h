#pragma once
// CentralStorageStrategy (tf.distribute.experimental.CentralStorageStrategy): synchronous training on several
// devices of one machine with one copy of the variables. The variables (and the optimizer's slots) live on the
// parameter device; compute is replicated over the compute devices, one replica per device; every replica's
// gradients are summed onto the parameter device, where the one optimizer update runs, and every replica reads
// the updated variables from there at the next step. Semantics otherwise as strategy.h says (split batches,
// gradients summed, not averaged), so it trains exactly as MirroredStrategy on the same devices.
//
//   CentralStorageStrategy()                           every logical GPU, else the CPU (one replica)
//   CentralStorageStrategy({"cpu:0", "cpu:1"})         two replicas on the host, variables in host memory
//   CentralStorageStrategy({"gpu:0", "gpu:1"}, "gpu:0") with TOWER_LOGICAL_GPUS=2: two replicas on one GPU,
//                                                      variables in its memory
//
// compute_devices: as MirroredStrategy's devices (logical_device.h); none given means every logical GPU, else
// "cpu:0". parameter_device: where the variables live; none given means the one physical GPU when every compute
// device is on one GPU (TensorFlow's "the single GPU"), else the host ("cpu:0"). Gradients are reduced with
// ReductionToOneDevice onto the replica that runs on the parameter device.
//
// Variables are read by the replicas where they live, so the parameter device must be the memory the compute
// devices compute in: the host for CPU compute devices, the GPU of GPU compute devices that are logical GPUs of one
// physical GPU. Compute devices on several physical GPUs, or GPUs with the variables in host memory, would need
// the variables copied to each GPU every step; this build refuses them (use MirroredStrategy there).
//
// Throws std::invalid_argument, starting with "CentralStorageStrategy: ", for an empty compute device list, an
// unknown device (listing the available ones), a device listed twice, CPU and GPU devices mixed, compute devices
// on several physical GPUs, and a parameter device other than the memory the compute devices compute in.
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy.h"

namespace tower::distribute {

class CentralStorageStrategy : public Strategy {
 public:
  explicit CentralStorageStrategy(std::optional<std::vector<std::string>> compute_devices = std::nullopt,
                                  std::optional<std::string> parameter_device = std::nullopt);
  // The same with a list: CentralStorageStrategy({"cpu:0", "cpu:1"}).
  CentralStorageStrategy(std::vector<std::string> compute_devices,
                         std::optional<std::string> parameter_device = std::nullopt);
  // Where the variables live (Device::cpu() for the host).
  Device parameter_device() const;
};

}  // namespace tower::distribute
