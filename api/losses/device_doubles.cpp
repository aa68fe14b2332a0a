#include "api/losses/device_doubles.h"

#include "api/core/device_memory.h"

namespace tower::losses::detail {

static_assert(sizeof(double) == sizeof(std::int64_t));

DeviceDoubles::DeviceDoubles(Index n, Device device) : cells_(Shape{n}, DType::int64, device) { cells_.zero(); }

void DeviceDoubles::zero() {
  if (defined()) cells_.zero();
}

std::vector<double> DeviceDoubles::read() const {
  std::vector<double> out(static_cast<std::size_t>(size()));
  if (!out.empty()) copy_bytes(out.data(), Device::cpu(), data(), device(), out.size() * sizeof(double));
  return out;
}

DeviceDoubles DeviceDoubles::to(Device target) const {
  if (!defined() || device() == target) return *this;
  DeviceDoubles out;
  out.cells_ = cells_.to(target);
  return out;
}

}  // namespace tower::losses::detail
