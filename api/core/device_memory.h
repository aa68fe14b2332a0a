#pragma once
// Raw memory operations on a device's storage, beneath tensors: what Tensor::copy_from, fill and zero use. The
// CPU's are here; a device without a runtime in this build (CUDA when it is not compiled in) throws
// std::invalid_argument naming the device.
#include <cstddef>

#include "api/core/device.h"

namespace tower {

// Copies `bytes` between any two devices (host <-> device, device <-> device); the ranges may overlap on the
// same device.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
// A mark in a device's queued work (an event on a GPU's stream), so that an upload waits for the work before the
// mark and not for everything queued since: the next batch's upload into a buffer only the start of the current
// step reads then overlaps the rest of the step. On the CPU nothing is queued and a marker does nothing.
class WorkMarker {
 public:
  explicit WorkMarker(Device device) : device_(device) {}
  ~WorkMarker();
  WorkMarker(const WorkMarker&) = delete;
  WorkMarker& operator=(const WorkMarker&) = delete;

  Device device() const { return device_; }
  // Marks the work queued on the device so far; a later mark replaces it.
  void record();
  // The event (null on the CPU and before the first record()).
  const void* handle() const { return event_; }

 private:
  Device device_;
  void* event_ = nullptr;
};

// copy_bytes from host memory `src` to `dst` on `dst_device`, ordered after the work `after` marked (nothing when
// it was never recorded) instead of after all the device's queued work; work queued after the call sees the bytes.
// The caller guarantees that no work queued after the mark touches `dst`. On the CPU, a plain copy. Throws
// std::invalid_argument when `after` marks another device.
void upload_after(void* dst, Device dst_device, const void* src, std::size_t bytes, const WorkMarker& after);
// Sets `bytes` bytes at `dst` to `value`.
void fill_bytes(void* dst, Device device, std::size_t bytes, unsigned char value);
// Sets n floats at `dst` to `value`.
void fill_floats(float* dst, Device device, std::size_t n, float value);

}  // namespace tower
