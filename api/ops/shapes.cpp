// The ops that move elements: broadcasting, transposing, joining, reshaping.
#include "api/ops/ops.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/ops/detail/op_helpers.h"
#include "api/ops/recorder.h"

namespace tower::ops {

using namespace detail;

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  require_float("broadcast_to", x, "the operand");
  const Shape out = backend::broadcast_shapes(x.shape(), shape, "ops.broadcast_to");
  if (out != shape)
    throw std::invalid_argument("ops.broadcast_to: " + x.shape().to_string() + " does not broadcast to " +
                                shape.to_string());
  // A copy even when nothing stretches: a tape tells values apart by their memory.
  Tensor y = x.shape() == shape ? x.clone() : stretched(x, shape, "ops.broadcast_to");
  const Shape from = x.shape();
  return recorded("broadcast_to", {x}, y, [from](const Tensor& g) { return std::vector<Tensor>{reduce_to(g, from)}; });
}

Tensor transpose(const Tensor& x, std::vector<int> perm) {
  require_float("transpose", x, "the operand");
  const int rank = x.shape().rank();
  if (perm.empty())
    for (int k = rank - 1; k >= 0; --k) perm.push_back(k);
  std::vector<int> sorted = normalized_axes("transpose", x.shape(), perm);
  if (static_cast<int>(perm.size()) != rank || static_cast<int>(sorted.size()) != rank)
    throw std::invalid_argument("ops.transpose: the axes must name each of the " + std::to_string(rank) +
                                " axes of shape " + x.shape().to_string() + " once");
  std::vector<Index> dims;
  std::vector<int> inverse(static_cast<std::size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    int& p = perm[static_cast<std::size_t>(k)];
    if (p < 0) p += rank;
    dims.push_back(x.shape().dims()[static_cast<std::size_t>(p)]);
    inverse[static_cast<std::size_t>(p)] = k;
  }
  Tensor y{Shape(dims), DType::float32, x.device()};
  if (y.numel() > 0) be(x).transpose(x.data<float>(), y.data<float>(), x.shape(), perm);
  return recorded("transpose", {x}, y,
                  [inverse](const Tensor& g) { return std::vector<Tensor>{transpose(g, inverse)}; });
}

Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("ops.concatenate: no tensors");
  for (const Tensor& x : xs) {
    require_float("concatenate", x, "each tensor");
    require_same_device("concatenate", xs.front(), x);
  }
  const Shape& first = xs.front().shape();
  const int k = normalized_axes("concatenate", first, {axis}).front();
  std::vector<Index> dims = first.dims();
  dims[static_cast<std::size_t>(k)] = 0;
  for (const Tensor& x : xs) {
    bool fits = x.shape().rank() == first.rank();
    for (int d = 0; fits && d < first.rank(); ++d)
      fits = d == k || x.shape().dims()[static_cast<std::size_t>(d)] == first.dims()[static_cast<std::size_t>(d)];
    if (!fits)
      throw std::invalid_argument("ops.concatenate: shapes " + first.to_string() + " and " + x.shape().to_string() +
                                  " differ off axis " + std::to_string(axis));
    dims[static_cast<std::size_t>(k)] += x.shape().dims()[static_cast<std::size_t>(k)];
  }
  Index outer = 1, inner = 1;
  for (int d = 0; d < k; ++d) outer *= first.dims()[static_cast<std::size_t>(d)];
  for (int d = k + 1; d < first.rank(); ++d) inner *= first.dims()[static_cast<std::size_t>(d)];
  const Index total = dims[static_cast<std::size_t>(k)] * inner;
  Tensor y(Shape(dims), DType::float32, xs.front().device());
  std::vector<Index> offsets;
  Index offset = 0;
  for (const Tensor& x : xs) {
    const Index width = x.shape().dims()[static_cast<std::size_t>(k)] * inner;
    offsets.push_back(offset);
    if (x.numel() > 0) be(x).copy_strided(x.data<float>(), width, y.data<float>(), total, offset, outer);
    offset += width;
  }
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  return recorded("concatenate", xs, y, [shapes, offsets, outer, inner, total, k](const Tensor& g) {
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      Tensor dx(shapes[i], DType::float32, g.device());
      const Index width = shapes[i].dims()[static_cast<std::size_t>(k)] * inner;
      if (dx.numel() > 0) be(g).copy_strided_back(g.data<float>(), total, offsets[i], dx.data<float>(), width, outer);
      out.push_back(dx);
    }
    return out;
  });
}

Tensor reshape(const Tensor& x, Shape shape) {
  require_float("reshape", x, "the operand");
  Tensor y;
  try {
    y = x.clone().reshape(std::move(shape));  // a copy: a tape tells values apart by their memory
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("ops.reshape: ") + e.what());
  }
  const Shape from = x.shape();
  return recorded("reshape", {x}, y, [from](const Tensor& g) { return std::vector<Tensor>{reshape(g, from)}; });
}

Tensor stop_gradient(const Tensor& x) {
  require_float("stop_gradient", x, "the operand");
  return x.clone();  // not recorded: a constant to every tape
}

}  // namespace tower::ops
