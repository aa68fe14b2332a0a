#include "api/core/alignment.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace tower {

void require_aligned(const Tensor& t, const std::string& what) {
  if (!t.defined()) return;
  const auto address = reinterpret_cast<std::uintptr_t>(t.raw_data());
  if (address % kBufferAlignment == 0) return;
  std::ostringstream os;
  os << what << " starts at 0x" << std::hex << address << std::dec << ", not on a " << kBufferAlignment
     << "-byte boundary (" << address % kBufferAlignment << " bytes past one): libraries and kernels may "
     << "access it in wider units than its own";
  throw std::logic_error(os.str());
}

PackedBuffers pack_buffers(const std::vector<Shape>& shapes, Device device, bool zeroed) {
  constexpr auto kFloats = static_cast<Index>(kBufferAlignment / sizeof(float));
  std::vector<Index> offsets;
  PackedBuffers p;
  Index end = 0;
  for (const Shape& s : shapes) {
    const Index offset = (end + kFloats - 1) / kFloats * kFloats;
    if (!p.rooms.empty()) p.rooms.back() = offset - offsets.back();
    offsets.push_back(offset);
    p.rooms.push_back(s.numel());
    end = offset + s.numel();
  }
  p.flat = Tensor(Shape{std::max<Index>(end, 1)}, DType::float32, device);
  if (zeroed) p.flat.zero();
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    p.views.push_back(p.flat.slice(offsets[k], offsets[k] + shapes[k].numel()).reshape(shapes[k]));
    require_aligned(p.views.back(), "packed buffer " + std::to_string(k) + " of " + std::to_string(shapes.size()));
  }
  return p;
}

}  // namespace tower
