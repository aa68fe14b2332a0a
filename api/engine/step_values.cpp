#include "api/engine/step_values.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace tower {

StepValues::StepValues(Device device, std::uint64_t seed) : device_(device), seed_(seed) {}

int StepValues::add(Source source) {
  const Index slot = static_cast<Index>(sources_.size());
  if (!host_.defined() || slot == host_.numel()) {
    const Index capacity = std::max<Index>(8, 2 * slot);
    Tensor grown(Shape{capacity}, DType::int64);
    std::fill_n(grown.data<std::int64_t>(), capacity, 0);
    if (host_.defined()) std::copy_n(host_.data<std::int64_t>(), slot, grown.data<std::int64_t>());
    host_ = grown;
    device_values_ = Tensor(Shape{capacity}, DType::int64, device_);
  }
  host_.data<std::int64_t>()[slot] = static_cast<std::int64_t>(source());
  sources_.push_back(std::move(source));
  upload();
  return static_cast<int>(slot);
}

void StepValues::refresh() {
  step_ = steps_++;
  if (sources_.empty()) return;
  std::int64_t* host = host_.data<std::int64_t>();
  for (std::size_t i = 0; i < sources_.size(); ++i) host[i] = static_cast<std::int64_t>(sources_[i]());
  upload();
}

void StepValues::upload() { device_values_.copy_from(host_); }

void StepValues::check_slot(int slot) const {
  if (slot < 0 || slot >= size())
    throw std::out_of_range("StepValues: no slot " + std::to_string(slot) + " (" + std::to_string(size()) +
                            " registered)");
}

const std::uint64_t* StepValues::device_value(int slot) const {
  check_slot(slot);
  return reinterpret_cast<const std::uint64_t*>(device_values_.data<std::int64_t>()) + slot;
}

std::uint64_t StepValues::host_value(int slot) const {
  check_slot(slot);
  return static_cast<std::uint64_t>(host_.data<std::int64_t>()[slot]);
}

}  // namespace tower
