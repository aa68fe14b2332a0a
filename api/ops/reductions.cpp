// The reductions (sums, moments, extremes, logsumexp), running sums, softmax and log_softmax.
#include "api/ops/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/ops/detail/op_helpers.h"
#include "api/ops/recorder.h"

namespace tower::ops {

using namespace detail;

Tensor sum(const Tensor& x, std::vector<int> axes, bool keepdims) {
  require_float("sum", x, "the operand");
  const std::vector<int> reduced = normalized_axes("sum", x.shape(), std::move(axes));
  std::vector<Index> kept = x.shape().dims(), dropped;
  for (int k : reduced) kept[static_cast<std::size_t>(k)] = 1;
  for (int k = 0; k < x.shape().rank(); ++k)
    if (!std::binary_search(reduced.begin(), reduced.end(), k)) dropped.push_back(x.shape().dims()[k]);
  const Shape kept_shape(kept);
  Tensor y = reduce_to(x, kept_shape);
  if (y.raw_data() == x.raw_data()) y = x.clone();  // nothing reduced: a tensor of its own
  if (!keepdims) y = y.reshape(Shape(dropped));
  const Shape from = x.shape();
  return recorded("sum", {x}, y, [from, kept_shape](const Tensor& g) {
    return std::vector<Tensor>{broadcast_to(g.reshape(kept_shape), from)};
  });
}

Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims) {
  require_float("mean", x, "the operand");
  Index count = 1;
  for (int k : normalized_axes("mean", x.shape(), axes)) count *= x.shape().dims()[static_cast<std::size_t>(k)];
  return divide(sum(x, std::move(axes), keepdims), scalar(static_cast<float>(count), x.device()));
}

Tensor var(const Tensor& x, std::vector<int> axes, bool keepdims) {
  const Tensor centered = subtract(x, mean(x, axes, true));
  return mean(square(centered), std::move(axes), keepdims);
}

Tensor std(const Tensor& x, std::vector<int> axes, bool keepdims) { return sqrt(var(x, std::move(axes), keepdims)); }

Tensor softmax(const Tensor& x, int axis) {
  require_float("softmax", x, "the operand");
  const int k = normalized_axes("softmax", x.shape(), {axis}).front();
  Index outer = 1, inner = 1;
  for (int d = 0; d < k; ++d) outer *= x.shape().dims()[static_cast<std::size_t>(d)];
  for (int d = k + 1; d < x.shape().rank(); ++d) inner *= x.shape().dims()[static_cast<std::size_t>(d)];
  const Index n = x.shape().dims()[static_cast<std::size_t>(k)];
  Tensor y(x.shape(), DType::float32, x.device());
  if (y.numel() > 0) be(x).softmax_forward(x.data<float>(), y.data<float>(), outer, n, inner);
  return recorded("softmax", {x}, y, [y, outer, n, inner](const Tensor& g) {
    Tensor dx(y.shape(), DType::float32, y.device());
    if (dx.numel() > 0)
      be(y).softmax_backward(y.data<float>(), g.data<float>(), dx.data<float>(), outer, n, inner);
    return std::vector<Tensor>{dx};
  });
}

namespace {

// The shapes of a reduction over `reduced` with (kept) and without (dropped) its axes as size 1.
struct Reduced {
  Shape kept, dropped;
};
Reduced reduced_shapes(const Shape& shape, const std::vector<int>& reduced) {
  std::vector<Index> kept = shape.dims(), dropped;
  for (int k : reduced) kept[static_cast<std::size_t>(k)] = 1;
  for (int k = 0; k < shape.rank(); ++k)
    if (!std::binary_search(reduced.begin(), reduced.end(), k))
      dropped.push_back(shape.dims()[static_cast<std::size_t>(k)]);
  return {Shape(kept), Shape(dropped)};
}

// max or min over `axes` (Backend::reduce_extreme over one axis at a time, the last first: the extreme of
// extremes is the extreme, NaN included). Each element equal to the result gets an equal share of its gradient.
Tensor extreme(bool max, const char* op, const Tensor& x, std::vector<int> axes, bool keepdims) {
  require_float(op, x, "the operand");
  const std::vector<int> reduced = normalized_axes(op, x.shape(), std::move(axes));
  for (int k : reduced)
    if (x.dim(k) == 0)
      throw std::invalid_argument(prefix(op) + "axis " + std::to_string(k) + " of shape " + x.shape().to_string() +
                                  " is empty: it has no " + (max ? "maximum" : "minimum"));
  const Reduced shapes = reduced_shapes(x.shape(), reduced);
  Tensor y = reduced.empty() ? x.clone() : x;  // a rank-0 x: nothing to reduce, a tensor of its own
  for (auto k = reduced.rbegin(); k != reduced.rend(); ++k) {
    const AxisView v = axis_view(y.shape(), *k);
    std::vector<Index> dims = y.shape().dims();
    dims[static_cast<std::size_t>(*k)] = 1;
    Tensor next(Shape(dims), DType::float32, x.device());
    if (next.numel() > 0)
      be(x).reduce_extreme(max, y.data<float>(), next.data<float>(), nullptr, v.outer, v.n, v.inner);
    y = next;
  }
  const Tensor y_kept = y;
  if (!keepdims) y = y.reshape(shapes.dropped);
  return recorded(op, {x}, y, [x, y_kept, reduced](const Tensor& g) {
    const Tensor chosen = equal(x, y_kept);
    const Tensor share = divide(chosen, sum(chosen, reduced, true));
    return std::vector<Tensor>{multiply(share, g.reshape(y_kept.shape()))};
  });
}

// The index of the first extreme along `axis` (none: of x flattened), int32.
Tensor arg_extreme(bool max, const char* op, const Tensor& x, std::optional<int> axis, bool keepdims) {
  require_float(op, x, "the operand");
  const Tensor source = axis ? x : x.reshape(Shape{x.numel()});
  const int k = normalized_axes(op, source.shape(), {axis.value_or(0)}).front();
  const AxisView v = axis_view(source.shape(), k);
  if (v.n == 0)
    throw std::invalid_argument(prefix(op) + "axis " + std::to_string(k) + " of shape " + source.shape().to_string() +
                                " is empty: it has no " + (max ? "maximum" : "minimum"));
  Shape shape = reduced_shapes(source.shape(), {k}).dropped;
  if (keepdims) shape = axis ? reduced_shapes(x.shape(), {k}).kept : Shape(std::vector<Index>(x.shape().rank(), 1));
  Tensor y(shape, DType::int32, x.device());
  if (y.numel() > 0)
    be(x).reduce_extreme(max, source.data<float>(), nullptr, y.data<std::int32_t>(), v.outer, v.n, v.inner);
  return y;
}

// The running sum along axis k, from the end when `reverse`; its gradient is the other direction's.
Tensor running_sum(const Tensor& x, int k, bool reverse) {
  const AxisView v = axis_view(x.shape(), k);
  Tensor y(x.shape(), DType::float32, x.device());
  if (y.numel() > 0) be(x).cumsum(x.data<float>(), y.data<float>(), v.outer, v.n, v.inner, reverse);
  return recorded("cumsum", {x}, y, [k, reverse](const Tensor& g) {
    return std::vector<Tensor>{running_sum(g, k, !reverse)};
  });
}

// What logsumexp subtracts before exp, as TensorFlow's reduce_logsumexp: the maximum over `axes` (kept as size 1)
// where it is finite, else 0; a constant to the gradient. Every axis of `axes` must be non-empty.
Tensor stable_shift(const Tensor& x, const std::vector<int>& axes) {
  const Tensor top = stop_gradient(max(x, axes, true));
  const Tensor finite = less(abs(top), scalar(INFINITY, x.device()));
  return where(finite, top, scalar(0.f, x.device()));
}

}  // namespace

Tensor max(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return extreme(true, "max", x, std::move(axes), keepdims);
}

Tensor min(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return extreme(false, "min", x, std::move(axes), keepdims);
}

Tensor argmax(const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_extreme(true, "argmax", x, axis, keepdims);
}

Tensor argmin(const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_extreme(false, "argmin", x, axis, keepdims);
}

Tensor logsumexp(const Tensor& x, std::vector<int> axes, bool keepdims) {
  require_float("logsumexp", x, "the operand");
  const std::vector<int> reduced = normalized_axes("logsumexp", x.shape(), axes);
  for (int k : reduced)
    if (x.dim(k) == 0) return log(sum(exp(x), std::move(axes), keepdims));  // log(0): -inf, no maximum to take
  const Tensor shift = stable_shift(x, axes);
  const Tensor total = sum(exp(subtract(x, shift)), std::move(axes), keepdims);
  return add(log(total), shift.reshape(total.shape()));
}

Tensor log_softmax(const Tensor& x, int axis) {
  require_float("log_softmax", x, "the operand");
  const int k = normalized_axes("log_softmax", x.shape(), {axis}).front();
  if (x.dim(k) == 0) return subtract(x, logsumexp(x, {k}, true));  // empty, as x is
  const Tensor shifted = subtract(x, stable_shift(x, {k}));  // exact where x - logsumexp(x) would round twice
  return subtract(shifted, log(sum(exp(shifted), {k}, true)));
}

Tensor cumsum(const Tensor& x, std::optional<int> axis) {
  require_float("cumsum", x, "the operand");
  const Tensor source = axis ? x : reshape(x, Shape{x.numel()});
  return running_sum(source, normalized_axes("cumsum", source.shape(), {axis.value_or(0)}).front(), false);
}

}  // namespace tower::ops
