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
// Sets `bytes` bytes at `dst` to `value`.
void fill_bytes(void* dst, Device device, std::size_t bytes, unsigned char value);
// Sets n floats at `dst` to `value`.
void fill_floats(float* dst, Device device, std::size_t n, float value);

}  // namespace tower
