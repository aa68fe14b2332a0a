#pragma once
// StepValues: the scalars that change from one training step to the next inside a plan's forward and backward
// (Dropout's seeds), kept in device memory. A captured CUDA graph bakes every kernel argument in, so an op whose
// argument changes per step reads it through a device pointer instead, from a buffer written before each step
// (and before each replay of the graph).
//
// A value comes from a source registered once (add), which is called for every step in registration order
// (refresh). The host mirror holds the values drawn last; refresh writes them there and uploads the mirror to
// the device in one copy.
#include <cstdint>
#include <functional>
#include <vector>

#include "api/core/device.h"
#include "api/core/tensor.h"

namespace tower {

class StepValues {
 public:
  using Source = std::function<std::uint64_t()>;

  explicit StepValues(Device device);
  StepValues(const StepValues&) = delete;
  StepValues& operator=(const StepValues&) = delete;

  Device device() const { return device_; }
  // Registers `source`, draws its value for the current step at once and uploads it; returns its slot. The
  // buffer may move: earlier device_value() pointers are void afterwards.
  int add(Source source);
  // Calls every source in registration order, writes the host mirror and uploads it (one copy).
  void refresh();
  int size() const { return static_cast<int>(sources_.size()); }
  // The value of `slot` on the device (memory of device()), as last refreshed. Throws std::out_of_range for a
  // slot add() did not return.
  const std::uint64_t* device_value(int slot) const;
  // The same value in the host mirror.
  std::uint64_t host_value(int slot) const;

 private:
  void upload();
  void check_slot(int slot) const;

  Device device_;
  std::vector<Source> sources_;
  Tensor host_, device_values_;  // int64 words holding the uint64 values; capacity >= size()
};

}  // namespace tower
