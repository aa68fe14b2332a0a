#pragma once
// Doubles in a device's memory: the accumulators of the training loop's loss sums and of metric states, which
// backend ops add into on the step path and a log point reads. Tensor has no float64 dtype, so the memory is that
// of an int64 tensor of the same length, only ever accessed as doubles.
#include <vector>

#include "api/core/tensor.h"

namespace tower::losses::detail {

class DeviceDoubles {
 public:
  DeviceDoubles() = default;
  // n zeros on `device`.
  DeviceDoubles(Index n, Device device);

  bool defined() const { return cells_.defined(); }
  Index size() const { return cells_.numel(); }
  Device device() const { return cells_.device(); }
  // Requires defined().
  double* data() const { return reinterpret_cast<double*>(cells_.raw_data()); }
  void zero();
  // The values, copied to the host: the read of a log point or a metric's result().
  std::vector<double> read() const;
  // The same values on `device` (this object itself when it is there already).
  DeviceDoubles to(Device device) const;

 private:
  Tensor cells_;
};

}  // namespace tower::losses::detail
