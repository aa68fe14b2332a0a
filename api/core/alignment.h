#pragma once
// One alignment for every buffer a library may read or write. cuDNN, cuBLASLt and Tower's vectorised kernels
// access memory in 16-byte and wider units and choose their kernels by the alignment of the pointers they get; a
// buffer that starts at an odd float inside a larger allocation (a bias's gradient in the flat gradient buffer)
// makes them fault with cudaErrorMisalignedAddress, which is sticky and ends every later GPU call of the
// process. So every allocation (allocator.h) and every view handed out as a buffer of its own (a weight's gradient
// in a flat buffer, a plan's arena slot) starts at a multiple of kBufferAlignment, on every device, and the
// code that makes such a view checks it with require_aligned.
#include <cstddef>
#include <string>
#include <vector>

#include "api/core/tensor.h"

namespace tower {

inline constexpr std::size_t kBufferAlignment = 256;

// `bytes` rounded up to a multiple of kBufferAlignment.
constexpr std::size_t align_bytes(std::size_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// Throws std::logic_error("<what> starts at <address>, not on a 256-byte boundary ...") unless t's first element
// is aligned to kBufferAlignment (an undefined tensor passes).
void require_aligned(const Tensor& t, const std::string& what);

// float32 buffers of `shapes` packed into one flat buffer, one after another, each starting on kBufferAlignment:
// `views[k]` has shapes[k]; `rooms[k]` is the floats buffer k takes with the padding after it (the last one
// none), so a range of consecutive buffers is one contiguous range of `flat`. `flat` holds the sum of rooms,
// at least one float.
struct PackedBuffers {
  Tensor flat;
  std::vector<Tensor> views;
  std::vector<Index> rooms;
};
// Allocates the packing on `device`, zero-filled when `zeroed`.
PackedBuffers pack_buffers(const std::vector<Shape>& shapes, Device device, bool zeroed);

}  // namespace tower
