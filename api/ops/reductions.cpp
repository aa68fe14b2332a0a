// The reductions (sums, moments) and softmax.
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

}  // namespace tower::ops
