#include "api/backend/broadcast.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace tower::backend {

namespace {

[[noreturn]] void refuse(const std::string& what, const Shape& a, const Shape& b, const std::string& why) {
  throw std::invalid_argument(what + ": shapes " + a.to_string() + " and " + b.to_string() + " do not broadcast: " +
                              why);
}

// operand's element strides over out's axes, aligned at the end; 0 where it is stretched or missing.
void strides_of(const Shape& operand, const Shape& out, Index* strides, const std::string& what) {
  const int rank = out.rank(), offset = out.rank() - operand.rank();
  if (offset < 0) refuse(what, operand, out, "the operand has more axes than the result");
  Index stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    const Index size = k >= offset ? operand.dims()[static_cast<std::size_t>(k - offset)] : 1;
    const Index want = out.dims()[static_cast<std::size_t>(k)];
    if (size != want && size != 1)
      refuse(what, operand, out, "axis " + std::to_string(k - rank) + " has " + std::to_string(size) + " and " +
                                     std::to_string(want));
    strides[k] = size == 1 && want != 1 ? 0 : stride;
    stride *= size;
  }
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<Index> dims(static_cast<std::size_t>(rank));
  for (int k = 1; k <= rank; ++k) {
    const Index x = k <= a.rank() ? a[-k] : 1, y = k <= b.rank() ? b[-k] : 1;
    if (x != y && x != 1 && y != 1)
      refuse(what, a, b, "axis " + std::to_string(-k) + " has " + std::to_string(x) + " and " + std::to_string(y));
    dims[static_cast<std::size_t>(rank - k)] = x == 1 ? y : x;
  }
  return Shape(std::move(dims));
}

Broadcast make_broadcast(const Shape& out, const Shape& a, const Shape& b, const std::string& what) {
  if (out.rank() > kMaxBroadcastRank)
    throw std::invalid_argument(what + ": " + std::to_string(out.rank()) + " axes in " + out.to_string() +
                                ", more than the " + std::to_string(kMaxBroadcastRank) + " a broadcast takes");
  Broadcast s;
  s.rank = out.rank();
  for (int k = 0; k < s.rank; ++k) s.dims[k] = out.dims()[static_cast<std::size_t>(k)];
  strides_of(a, out, s.a, what);
  strides_of(b, out, s.b, what);
  return s;
}

void sum_to(Backend& backend, const float* dy, const Shape& from, float* dx, const Shape& to, const std::string& what) {
  const int rank = from.rank(), kept = to.rank();
  int m = 0;  // the trailing axes `to` shares with `from`
  while (m < kept && m < rank && to[-(m + 1)] == from[-(m + 1)]) ++m;
  bool ones_before = kept <= rank;
  for (int k = m + 1; k <= kept; ++k) ones_before = ones_before && to[-k] == 1;
  if (ones_before) {
    Index cols = 1;
    for (int k = 1; k <= m; ++k) cols *= from[-k];
    backend.bias_grad(dy, dx, from.numel() / cols, cols);
    return;
  }
  backend.broadcast_reduce(dy, dx, make_broadcast(from, to, from, what));
}

}  // namespace tower::backend
