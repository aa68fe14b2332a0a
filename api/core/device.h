#pragma once
#include <string>
#include <vector>

namespace tower {

// Where a tensor lives: the host ("cpu") or one GPU ("cuda:N").
struct Device {
  enum class Type { cpu, cuda };
  Type type = Type::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Type::cuda, index}; }
  // Parses "cpu", "cuda", "cuda:N", "gpu:N" and "/gpu:N"; throws std::invalid_argument otherwise.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == Type::cpu; }
  bool is_cuda() const { return type == Type::cuda; }
  std::string to_string() const;
  bool operator==(const Device&) const = default;
};

// GPUs this process can use: 0 when Tower was built without CUDA or no GPU (or driver) is present.
int cuda_device_count();
// Where a model runs when nothing chose its device: the TOWER_DEVICE environment variable ("cpu", "cuda:N"; a
// value Device::parse refuses, or a GPU that is not there, throws std::invalid_argument naming the variable),
// else GPU 0 when one is visible, else the CPU. With CUDA built in and no GPU visible, the fallback to the CPU is
// logged once to stderr.
Device default_device();
// Keras' tf.config.list_physical_devices: "CPU", "GPU" or "" for all. The CPU is always listed.
std::vector<Device> list_physical_devices(const std::string& type = "");

}  // namespace tower
