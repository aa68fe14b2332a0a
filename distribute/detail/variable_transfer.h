#pragma once
// How ParameterServerStrategy's values cross between a message and a tensor on the device that computes with it
// (parameter_server_strategy.h). A message carries a float32 tensor's bytes in host memory, row-major; the tensor
// may be on the CPU or a GPU. Each direction is one copy_bytes (device_memory.h) of the whole tensor, straight
// between the message's bytes and the tensor's storage: one host-to-device copy per pulled variable, one
// device-to-host copy per pushed gradient, and no work per element on the host.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "api/core/tensor.h"

namespace tower::distribute::detail {

// copy_bytes's signature; the tests pass one that records the copies asked for.
using CopyBytes = std::function<void(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes)>;

// target's storage = `bytes`, with one copy onto target's device. Requires a defined, contiguous target; throws
// std::invalid_argument, giving both sizes and target's shape and device, when bytes.size() != target.nbytes().
void copy_into(std::string_view bytes, Tensor& target, const CopyBytes& copy);
void copy_into(std::string_view bytes, Tensor& target);
// out = value's bytes (resized to value.nbytes()), with one copy from value's device.
void copy_out(const Tensor& value, std::string& out, const CopyBytes& copy);
void copy_out(const Tensor& value, std::string& out);

}  // namespace tower::distribute::detail
