#pragma once
#include <string>

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

}  // namespace tower
