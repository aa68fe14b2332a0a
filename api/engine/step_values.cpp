#include "api/engine/step_values.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/engine/replica_context.h"

namespace tower {

namespace {
// splitmix64's finalizer over boost's hash_combine: every input bit moves the whole result.
std::uint64_t combine(std::uint64_t h, std::uint64_t v) {
  std::uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

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

int StepValues::add_seed(std::optional<std::int64_t> seed, const ReplicaContext* replica,
                         std::initializer_list<std::uint64_t> salt) {
  const std::uint64_t position = static_cast<std::uint64_t>(size());
  return add([this, seed, replica, position, salt = std::vector<std::uint64_t>(salt)] {
    std::uint64_t h = seed ? static_cast<std::uint64_t>(*seed) : seed_;
    h = combine(h, step_);
    h = combine(h, replica ? static_cast<std::uint64_t>(replica->replica_id_in_sync_group()) : 0);
    h = combine(h, position);
    for (const std::uint64_t s : salt) h = combine(h, s);
    return h;
  });
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
