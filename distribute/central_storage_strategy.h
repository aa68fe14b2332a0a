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
//   CentralStorageStrategy({"gpu:0", "gpu:1"})         two GPUs, variables in host memory
//   CentralStorageStrategy({"gpu:0", "gpu:1"}, "gpu:0") the variables on the first GPU
//
// compute_devices: as MirroredStrategy's devices (logical_device.h); none given means every logical GPU, else
// "cpu:0". parameter_device: where the variables live, any device logical_device.h names; none given means the
// one device every compute device computes on when there is one (the host for CPU replicas, the GPU of logical
// GPUs of one GPU: TensorFlow's "the single GPU"), else the host.
//
// A replica on the parameter device computes with the variables in place; a replica elsewhere computes with a copy
// of the model on its own device into which the variables are read at the start of every step (as TensorFlow
// reads a variable onto the device that uses it; detail/mirrored_replicas.h, CentralStorage). The gradients are
// summed with ReductionToOneDevice onto the first replica's device and copied to the parameter device if that is
// elsewhere; the one optimizer update runs there, with the only optimizer. BatchNormalization's moving statistics
// are the first replica's. options.read_copies makes replicas on the parameter device read copies too (for tests:
// it proves on the CPU what replicas on other devices run).
//
// Throws std::invalid_argument, starting with "CentralStorageStrategy: ", for an empty compute device list, an
// unknown device (listing the available ones), a device listed twice, CPU and GPU compute devices mixed, and an
// unknown parameter device; when a model is first run, for a model whose config does not rebuild (a layer the
// registry does not know) where a replica reads a copy.
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy.h"

namespace tower::distribute {

struct CentralStorageStrategyOptions {
  bool read_copies = false;
};

class CentralStorageStrategy : public Strategy {
 public:
  explicit CentralStorageStrategy(std::optional<std::vector<std::string>> compute_devices = std::nullopt,
                                  std::optional<std::string> parameter_device = std::nullopt,
                                  CentralStorageStrategyOptions options = {});
  // The same with a list: CentralStorageStrategy({"cpu:0", "cpu:1"}).
  CentralStorageStrategy(std::vector<std::string> compute_devices,
                         std::optional<std::string> parameter_device = std::nullopt,
                         CentralStorageStrategyOptions options = {});
  // Where the variables live (Device::cpu() for the host).
  Device parameter_device() const;
};

}  // namespace tower::distribute
