// The ops that move elements: broadcasting, transposing, joining, reshaping, slicing, gathering, padding and
// repeating; and casts. Slices and paddings are strided windows (Backend::strided_copy) read or written.
#include "api/ops/ops.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/core/device_memory.h"
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

namespace {

// "[1, -2, 3]", for messages about lists of numbers.
std::string text(const std::vector<Index>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<Index> dense_strides(const Shape& shape) {
  std::vector<Index> strides(static_cast<std::size_t>(shape.rank()));
  Index stride = 1;
  for (int k = shape.rank() - 1; k >= 0; --k) {
    strides[static_cast<std::size_t>(k)] = stride;
    stride *= shape.dims()[static_cast<std::size_t>(k)];
  }
  return strides;
}

// A strided window into a tensor: its element (i_0, ..., i_r-1) over `dims` lies at offset + sum i_k strides[k].
struct Window {
  Index offset = 0;
  std::vector<Index> dims, strides;
};

backend::StridedCopy strided_copy_of(const char* op, const std::vector<Index>& dims,
                                     const std::vector<Index>& x_strides, const std::vector<Index>& y_strides) {
  if (dims.size() > static_cast<std::size_t>(backend::kMaxStridedRank))
    throw std::invalid_argument(prefix(op) + std::to_string(dims.size()) + " axes, more than the " +
                                std::to_string(backend::kMaxStridedRank) + " a strided copy takes");
  backend::StridedCopy s;
  s.rank = static_cast<int>(dims.size());
  for (std::size_t k = 0; k < dims.size(); ++k) {
    s.dims[k] = dims[k];
    s.x_strides[k] = x_strides[k];
    s.y_strides[k] = y_strides[k];
  }
  return s;
}

// x's window w as a dense tensor (a slice's forward, a padding's backward).
Tensor read_window(const char* op, const Tensor& x, const Window& w) {
  Tensor y(Shape(w.dims), DType::float32, x.device());
  if (y.numel() > 0)
    be(x).strided_copy(x.data<float>() + w.offset, y.data<float>(),
                       strided_copy_of(op, w.dims, w.strides, dense_strides(y.shape())));
  return y;
}

// A tensor of `shape` holding `fill`, with src (dense over w.dims) written into its window w (a padding's forward,
// a slice's backward).
Tensor write_window(const char* op, const Tensor& src, const Shape& shape, const Window& w, float fill) {
  Tensor y(shape, DType::float32, src.device());
  if (y.numel() == 0) return y;
  be(src).fill(y.data<float>(), y.numel(), fill);
  if (src.numel() > 0)
    be(src).strided_copy(src.data<float>(), y.data<float>() + w.offset,
                         strided_copy_of(op, w.dims, dense_strides(src.shape()), w.strides));
  return y;
}

// x's window w, recorded with its gradient written back into zeros of x's shape.
Tensor windowed(const char* op, const Tensor& x, const Window& w) {
  Tensor y = read_window(op, x, w);
  const Shape from = x.shape();
  return recorded(op, {x}, y, [op, from, w](const Tensor& g) {
    return std::vector<Tensor>{write_window(op, g, from, w, 0.f)};
  });
}

void require_indices(const std::string& op, const Tensor& indices) {
  if (!indices.defined()) throw std::invalid_argument(prefix(op) + "the indices are an undefined tensor");
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64 && indices.dtype() != DType::float32)
    throw std::invalid_argument(prefix(op) + "the indices must be int32, int64 or float32, got " +
                                dtype_name(indices.dtype()) + " " + indices.shape().to_string());
}

backend::AnyValues values_of(const Tensor& t) { return {t.raw_data(), t.dtype()}; }

// Index `at` of `indices`, read back from its device, as text.
std::string index_text(const Tensor& indices, std::int64_t at) {
  const std::size_t size = dtype_size(indices.dtype());
  unsigned char bytes[8] = {};
  copy_bytes(bytes, Device::cpu(), static_cast<const unsigned char*>(indices.raw_data()) + at * size, indices.device(),
             size);
  std::int64_t whole = 0;
  std::int32_t narrow = 0;
  float number = 0;
  switch (indices.dtype()) {
    case DType::int64: std::memcpy(&whole, bytes, sizeof whole); return std::to_string(whole);
    case DType::int32: std::memcpy(&narrow, bytes, sizeof narrow); return std::to_string(narrow);
    default: {
      std::memcpy(&number, bytes, sizeof number);
      std::ostringstream s;
      s << number;
      return s.str();
    }
  }
}

// Throws, naming the first index outside [-n, n) along axis k of `shape` (found on the device, read back).
void check_indices(const char* op, const Tensor& indices, Index n, int k, const Shape& shape) {
  if (indices.numel() == 0) return;
  const Tensor first(Shape{1}, DType::int64, indices.device());
  be(indices).find_invalid_index(values_of(indices), indices.numel(), n, first.data<std::int64_t>());
  std::int64_t at = -1;
  copy_bytes(&at, Device::cpu(), first.raw_data(), first.device(), sizeof at);
  if (at < 0) return;
  throw std::invalid_argument(prefix(op) + "index " + index_text(indices, at) + " at position " + std::to_string(at) +
                              " of the indices " + indices.shape().to_string() + " is out of range for axis " +
                              std::to_string(k) + " of size " + std::to_string(n) + " (shape " + shape.to_string() +
                              ")");
}

// axis of a result with one more axis than `shape` (expand_dims, stack, one_hot) as non-negative.
int inserted_axis(const char* op, const Shape& shape, int axis) {
  const int rank = shape.rank();
  if (axis < -rank - 1 || axis > rank)
    throw std::invalid_argument(prefix(op) + "axis " + std::to_string(axis) +
                                " is out of range for a new axis of shape " + shape.to_string());
  return axis < 0 ? axis + rank + 1 : axis;
}

// The dims of `shape` with `size` in place of axis k's.
std::vector<Index> with_axis(const Shape& shape, int k, Index size) {
  std::vector<Index> dims = shape.dims();
  dims[static_cast<std::size_t>(k)] = size;
  return dims;
}

}  // namespace

Tensor expand_dims(const Tensor& x, int axis) {
  require_float("expand_dims", x, "the operand");
  std::vector<Index> dims = x.shape().dims();
  dims.insert(dims.begin() + inserted_axis("expand_dims", x.shape(), axis), 1);
  return reshape(x, Shape(dims));
}

Tensor squeeze(const Tensor& x, std::vector<int> axes) {
  require_float("squeeze", x, "the operand");
  const bool every = axes.empty();
  const std::vector<int> named = every ? std::vector<int>{} : normalized_axes("squeeze", x.shape(), std::move(axes));
  std::vector<Index> dims;
  for (int k = 0; k < x.rank(); ++k) {
    const Index n = x.dim(k);
    const bool chosen = every ? n == 1 : std::binary_search(named.begin(), named.end(), k);
    if (chosen && n != 1)
      throw std::invalid_argument("ops.squeeze: axis " + std::to_string(k) + " of shape " + x.shape().to_string() +
                                  " has size " + std::to_string(n) + ", not 1");
    if (!chosen) dims.push_back(n);
  }
  return reshape(x, Shape(dims));
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("ops.stack: no tensors");
  for (const Tensor& x : xs) {
    require_float("stack", x, "each tensor");
    if (x.shape() != xs.front().shape())
      throw std::invalid_argument("ops.stack: shapes " + xs.front().shape().to_string() + " and " +
                                  x.shape().to_string() + " differ (stacked tensors have one shape)");
  }
  const int k = inserted_axis("stack", xs.front().shape(), axis);
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) parts.push_back(expand_dims(x, k));
  return concatenate(parts, k);
}

std::vector<Tensor> split(const Tensor& x, int sections, int axis) {
  require_float("split", x, "the operand");
  const int k = normalized_axes("split", x.shape(), {axis}).front();
  const Index n = x.dim(k);
  if (sections <= 0 || n % sections != 0)
    throw std::invalid_argument("ops.split: axis " + std::to_string(k) + " of shape " + x.shape().to_string() +
                                " does not split into " + std::to_string(sections) + " equal sections");
  std::vector<Index> indices;
  for (Index i = 1; i < sections; ++i) indices.push_back(i * (n / sections));
  return split(x, indices, k);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<Index>& indices, int axis) {
  require_float("split", x, "the operand");
  const int k = normalized_axes("split", x.shape(), {axis}).front();
  const Index n = x.dim(k);
  std::vector<Index> bounds{0};
  for (Index i : indices) {
    if (i < bounds.back() || i > n)
      throw std::invalid_argument("ops.split: the split indices " + text(indices) + " must increase within [0, " +
                                  std::to_string(n) + "] along axis " + std::to_string(k) + " of shape " +
                                  x.shape().to_string());
    bounds.push_back(i);
  }
  bounds.push_back(n);
  std::vector<Tensor> parts;
  for (std::size_t p = 0; p + 1 < bounds.size(); ++p) {
    std::vector<Index> start(static_cast<std::size_t>(x.rank()), 0);
    start[static_cast<std::size_t>(k)] = bounds[p];
    parts.push_back(slice(x, start, with_axis(x.shape(), k, bounds[p + 1] - bounds[p])));
  }
  return parts;
}

Tensor slice(const Tensor& x, const std::vector<Index>& start_indices, const std::vector<Index>& shape) {
  require_float("slice", x, "the operand");
  const auto rank = static_cast<std::size_t>(x.rank());
  const std::string what = "the block at " + text(start_indices) + " of shape " + text(shape);
  if (start_indices.size() != rank || shape.size() != rank)
    throw std::invalid_argument("ops.slice: " + what + " needs one start and one size per axis of shape " +
                                x.shape().to_string());
  const std::vector<Index> strides = dense_strides(x.shape());
  Window w;
  for (std::size_t k = 0; k < rank; ++k) {
    const Index n = x.shape().dims()[k], begin = start_indices[k], size = shape[k] == -1 ? n - begin : shape[k];
    if (begin < 0 || size < 0 || begin > n || size > n - begin)
      throw std::invalid_argument("ops.slice: " + what + " does not lie inside shape " + x.shape().to_string());
    w.offset += begin * strides[k];
    w.dims.push_back(size);
    w.strides.push_back(strides[k]);
  }
  return windowed("slice", x, w);
}

Tensor strided_slice(const Tensor& x, const std::vector<Index>& begin, const std::vector<Index>& end,
                     const std::vector<Index>& strides) {
  require_float("strided_slice", x, "the operand");
  const std::size_t given = begin.size();
  if (end.size() != given || strides.size() != given || given > static_cast<std::size_t>(x.rank()))
    throw std::invalid_argument("ops.strided_slice: begin " + text(begin) + ", end " + text(end) + " and strides " +
                                text(strides) + " need one entry each per leading axis of shape " +
                                x.shape().to_string());
  const std::vector<Index> dense = dense_strides(x.shape());
  Window w;
  for (std::size_t k = 0; k < static_cast<std::size_t>(x.rank()); ++k) {
    const Index n = x.shape().dims()[k];
    if (k >= given) {
      w.dims.push_back(n);
      w.strides.push_back(dense[k]);
      continue;
    }
    const Index step = strides[k];
    if (step == 0) throw std::invalid_argument("ops.strided_slice: stride 0 on axis " + std::to_string(k));
    // Python's clamping: a bound counts from the end when negative, then is held to [0, n] for a positive step and
    // to [-1, n - 1] for a negative one.
    const Index low = step > 0 ? 0 : -1, high = step > 0 ? n : n - 1;
    const auto clamp = [&](Index v) { return v < 0 ? (v < -n ? low : std::max(v + n, low)) : std::min(v, high); };
    const Index first = clamp(begin[k]), stop = clamp(end[k]);
    Index count = 0;
    if (step > 0 && stop > first) count = (stop - first - 1) / step + 1;
    if (step < 0 && first > stop) count = (stop - first + 1) / step + 1;
    if (count > 0) w.offset += first * dense[k];
    w.dims.push_back(count);
    w.strides.push_back(step * dense[k]);
  }
  return windowed("strided_slice", x, w);
}

Tensor take(const Tensor& x, const Tensor& indices, std::optional<int> axis) {
  require_float("take", x, "the operand");
  require_indices("take", indices);
  require_same_device("take", x, indices);
  const Tensor source = axis ? x : x.reshape(Shape{x.numel()});
  const int k = normalized_axes("take", source.shape(), {axis.value_or(0)}).front();
  const AxisView v = axis_view(source.shape(), k);
  check_indices("take", indices, v.n, k, source.shape());
  std::vector<Index> dims(source.shape().dims().begin(), source.shape().dims().begin() + k);
  dims.insert(dims.end(), indices.shape().dims().begin(), indices.shape().dims().end());
  dims.insert(dims.end(), source.shape().dims().begin() + k + 1, source.shape().dims().end());
  Tensor y(Shape(dims), DType::float32, x.device());
  const Index count = indices.numel();
  if (y.numel() > 0)
    be(x).take(values_of(indices), count, source.data<float>(), y.data<float>(), v.outer, v.n, v.inner);
  const Shape from = x.shape();
  return recorded("take", {x}, y, [indices, count, from, v](const Tensor& g) {
    Tensor dx(from, DType::float32, g.device());
    if (dx.numel() > 0)
      be(g).take_backward(values_of(indices), count, g.data<float>(), dx.data<float>(), v.outer, v.n, v.inner);
    return std::vector<Tensor>{dx};
  });
}

Tensor one_hot(const Tensor& indices, Index num_classes, int axis) {
  require_indices("one_hot", indices);
  if (num_classes < 0 || num_classes > (Index{1} << 24))
    throw std::invalid_argument("ops.one_hot: " + std::to_string(num_classes) +
                                " classes; one_hot takes from 0 to 2^24 (float32 counts them exactly)");
  const int k = inserted_axis("one_hot", indices.shape(), axis);
  const PauseRecording no_gradient;  // indices have none
  Tensor position(indices.shape(), DType::float32, indices.device());
  if (indices.numel() > 0) {
    if (indices.dtype() == DType::float32) {  // truncated toward zero through int32; NaN matches no class
      const Tensor whole(indices.shape(), DType::int32, indices.device());
      be(indices).cast(values_of(indices), indices.numel(), DType::int32, whole.raw_data());
      be(indices).cast(values_of(whole), indices.numel(), DType::float32, position.raw_data());
      position = where(equal(indices, indices), position, scalar(-1.f, indices.device()));
    } else {
      be(indices).cast(values_of(indices), indices.numel(), DType::float32, position.raw_data());
    }
  }
  std::vector<float> classes(static_cast<std::size_t>(num_classes));
  for (std::size_t c = 0; c < classes.size(); ++c) classes[c] = static_cast<float>(c);
  std::vector<Index> dims = indices.shape().dims();
  dims.push_back(1);
  const Tensor all = Tensor::from_vector(classes, Shape{num_classes}).to(indices.device());
  const Tensor y = equal(position.reshape(Shape(dims)), all);
  if (k == indices.rank()) return y;
  std::vector<int> perm;  // the class axis from last to k
  for (int d = 0; d < indices.rank(); ++d) {
    if (d == k) perm.push_back(indices.rank());
    perm.push_back(d);
  }
  return transpose(y, perm);
}

Tensor pad(const Tensor& x, const std::vector<std::pair<Index, Index>>& pad_width, float constant_value) {
  require_float("pad", x, "the operand");
  const auto rank = static_cast<std::size_t>(x.rank());
  if (pad_width.size() != rank && pad_width.size() != 1)
    throw std::invalid_argument("ops.pad: " + std::to_string(pad_width.size()) + " pairs of pad widths for shape " +
                                x.shape().to_string() + "; give one per axis or one for every axis");
  std::vector<Index> dims;
  for (std::size_t k = 0; k < rank; ++k) {
    const auto [before, after] = pad_width[pad_width.size() == 1 ? 0 : k];
    if (before < 0 || after < 0)
      throw std::invalid_argument("ops.pad: pad widths (" + std::to_string(before) + ", " + std::to_string(after) +
                                  ") on axis " + std::to_string(k) + " of shape " + x.shape().to_string() +
                                  " are negative");
    dims.push_back(x.shape().dims()[k] + before + after);
  }
  const Shape out(dims);
  Window inside;  // x's place in the result
  inside.dims = x.shape().dims();
  inside.strides = dense_strides(out);
  for (std::size_t k = 0; k < rank; ++k)
    inside.offset += pad_width[pad_width.size() == 1 ? 0 : k].first * inside.strides[k];
  Tensor y = write_window("pad", x, out, inside, constant_value);
  return recorded("pad", {x}, y,
                  [inside](const Tensor& g) { return std::vector<Tensor>{read_window("pad", g, inside)}; });
}

// tile and repeat stretch one axis at a time through broadcast_to, on views of rank 3 or 4: differentiable by the
// ops they are made of, at any rank.
Tensor tile(const Tensor& x, const std::vector<Index>& repeats) {
  require_float("tile", x, "the operand");
  for (Index r : repeats)
    if (r < 0) throw std::invalid_argument("ops.tile: negative repeats " + text(repeats));
  const std::size_t rank = std::max(static_cast<std::size_t>(x.rank()), repeats.size());
  std::vector<Index> dims(rank - static_cast<std::size_t>(x.rank()), 1), times(rank - repeats.size(), 1);
  dims.insert(dims.end(), x.shape().dims().begin(), x.shape().dims().end());
  times.insert(times.end(), repeats.begin(), repeats.end());
  Tensor y = reshape(x, Shape(dims));
  for (std::size_t k = 0; k < rank; ++k) {
    if (times[k] == 1) continue;
    const AxisView v = axis_view(y.shape(), static_cast<int>(k));
    const Tensor stretched_axis =
        broadcast_to(reshape(y, Shape{v.outer, 1, v.n * v.inner}), Shape{v.outer, times[k], v.n * v.inner});
    y = reshape(stretched_axis, Shape(with_axis(y.shape(), static_cast<int>(k), v.n * times[k])));
  }
  return y;
}

Tensor repeat(const Tensor& x, Index repeats, std::optional<int> axis) {
  require_float("repeat", x, "the operand");
  if (repeats < 0) throw std::invalid_argument("ops.repeat: negative repeats " + std::to_string(repeats));
  const Tensor source = axis ? x : reshape(x, Shape{x.numel()});
  const int k = normalized_axes("repeat", source.shape(), {axis.value_or(0)}).front();
  const AxisView v = axis_view(source.shape(), k);
  const Tensor each =
      broadcast_to(reshape(source, Shape{v.outer, v.n, 1, v.inner}), Shape{v.outer, v.n, repeats, v.inner});
  return reshape(each, Shape(with_axis(source.shape(), k, v.n * repeats)));
}

Tensor cast(const Tensor& x, DType dtype) {
  if (!x.defined()) throw std::invalid_argument("ops.cast: the operand is an undefined tensor");
  Tensor y(x.shape(), dtype, x.device());
  if (y.numel() > 0) be(x).cast(values_of(x), x.numel(), dtype, y.raw_data());
  if (x.dtype() != DType::float32 || dtype != DType::float32) return y;  // no gradient through integers
  return recorded("cast", {x}, y, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor stop_gradient(const Tensor& x) {
  require_float("stop_gradient", x, "the operand");
  return x.clone();  // not recorded: a constant to every tape
}

}  // namespace tower::ops
