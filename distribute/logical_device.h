#pragma once
// Device names a strategy accepts, as TensorFlow writes them. A logical device is what one replica runs on:
//   "cpu:N"  a logical CPU device (TensorFlow's virtual CPU devices). Any N >= 0 is available: every logical CPU
//            device computes on the host, so {"cpu:0", "cpu:1"} is two replicas on one machine;
//   "gpu:N"  logical GPU N; "cuda:N" is the same device. Each GPU this process sees (cuda_device_count()) is one
//            logical GPU, or several when logical GPUs are configured (below): then gpu:N runs on physical GPU
//            N / logical_gpus_per_gpu(), so that several replicas, and their reductions, run on one GPU.
// Also accepted, in any case: a leading '/', "/device:CPU:N", "/job:localhost/replica:0/task:0/device:GPU:N", and
// "cpu" / "gpu" for index 0.
#include <string>
#include <vector>

#include "api/core/device.h"

namespace tower::distribute {

struct LogicalDevice {
  std::string name;  // canonical: "cpu:1", "gpu:0"
  Device device;     // where the replica's tensors live: the host for every logical CPU device, the physical GPU
  bool operator==(const LogicalDevice&) const = default;
};

// Logical GPUs, as TensorFlow's tf.config.set_logical_device_configuration makes them: every physical GPU appears
// as `per_gpu` logical GPUs sharing its memory. NCCL refuses two ranks on one GPU, so a strategy over logical GPUs
// of one physical GPU reduces without NCCL (see cross_device_ops.h). Affects the devices parsed and listed after
// the call; strategies already made keep theirs. Throws std::invalid_argument for per_gpu < 1.
void set_logical_gpus_per_gpu(int per_gpu);
// The value set by set_logical_gpus_per_gpu, else the environment variable TOWER_LOGICAL_GPUS (read when first
// needed; a value that is not a whole number >= 1 throws std::invalid_argument naming the variable), else 1.
int logical_gpus_per_gpu();
// The logical GPUs of `physical` GPUs split `per_gpu` ways: gpu:(p * per_gpu + j) on cuda:p.
std::vector<LogicalDevice> logical_gpus(int physical, int per_gpu);

// Error messages of distribute/ start with the caller's name, `who` ("MirroredStrategy"): message_prefix(who) is
// "MirroredStrategy: " (the separator added when missing), and "" for an empty `who`.
std::string message_prefix(const std::string& who);

// Throws std::invalid_argument, starting with `who` and listing available_devices(), for a name that is not one
// of the forms above or a GPU this process does not see.
LogicalDevice parse_logical_device(const std::string& name, const std::string& who);
// The same against `visible_gpus` physical GPUs instead of the cuda_device_count() this process sees: what a
// process's device choice is decided (and tested) with.
LogicalDevice parse_logical_device(const std::string& name, const std::string& who, int visible_gpus);
// "cpu:0, cpu:1, ... (logical CPU devices, any index), gpu:0, gpu:1" (or "no GPU visible").
std::string available_devices();
// The same for `visible_gpus` physical GPUs.
std::string available_devices(int visible_gpus);
// What a strategy uses when given no devices: every logical GPU, else "cpu:0".
std::vector<LogicalDevice> default_devices();
// Parses a strategy's device list: throws std::invalid_argument (starting with `who`) for an empty list, a
// name listed twice, or CPU and GPU devices mixed.
std::vector<LogicalDevice> parse_device_list(const std::vector<std::string>& names, const std::string& who);

}  // namespace tower::distribute
