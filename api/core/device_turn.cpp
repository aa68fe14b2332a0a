#include "api/core/device_turn.h"

#include <array>
#include <stdexcept>
#include <string>

namespace tower {

std::mutex& device_turn(Device gpu) {
  constexpr int kMaxGpus = 64;
  static std::array<std::mutex, kMaxGpus> turns;
  if (!gpu.is_cuda() || gpu.index < 0 || gpu.index >= kMaxGpus)
    throw std::invalid_argument("device_turn: " + gpu.to_string() + " is not a GPU of this process");
  return turns[static_cast<std::size_t>(gpu.index)];
}

}  // namespace tower
