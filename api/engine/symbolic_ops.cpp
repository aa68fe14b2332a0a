#include "api/engine/symbolic_ops.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/engine/custom_layer.h"
#include "api/ops/einsum.h"
#include "api/ops/ops.h"

namespace tower::ops {

namespace {

// A node of `type` ("multiply") running `f` on the step's tensors.
SymbolicTensor node(const char* type, std::vector<SymbolicTensor> inputs, FunctionLayer::Function f) {
  auto layer = std::make_shared<FunctionLayer>(type, "", static_cast<int>(inputs.size()), std::move(f));
  return (*layer)(inputs)[0];
}

SymbolicTensor unary(const char* type, const SymbolicTensor& x, Tensor (*op)(const Tensor&)) {
  return node(type, {x}, [op](const std::vector<Tensor>& t) { return op(t[0]); });
}

SymbolicTensor binary(const char* type, const SymbolicTensor& a, const SymbolicTensor& b,
                      Tensor (*op)(const Tensor&, const Tensor&)) {
  return node(type, {a, b}, [op](const std::vector<Tensor>& t) { return op(t[0], t[1]); });
}

// The axes of a reduction of a symbolic tensor, which must leave the batch axis.
std::vector<int> without_batch(const char* op, const SymbolicTensor& x, std::vector<int> axes) {
  const int rank = x.shape().rank();
  if (axes.empty()) throw std::invalid_argument(std::string("ops.") + op + ": name the axes to reduce; a node keeps the batch axis");
  for (int a : axes)
    if (a == 0 || a == -rank)
      throw std::invalid_argument(std::string("ops.") + op + ": axis " + std::to_string(a) + " of shape " +
                                  x.shape().to_string() + " is the batch axis, which a node keeps");
  return axes;
}

// A reduction over non-batch axes as a node.
SymbolicTensor reduction(const char* type, const SymbolicTensor& x, std::vector<int> axes, bool keepdims,
                         Tensor (*op)(const Tensor&, std::vector<int>, bool)) {
  axes = without_batch(type, x, std::move(axes));
  return node(type, {x}, [op, axes, keepdims](const std::vector<Tensor>& t) { return op(t[0], axes, keepdims); });
}

// A float as a constant operand of a node: the op against a rank-0 tensor on the step's device.
SymbolicTensor with_scalar(const char* type, const SymbolicTensor& x, float v, bool scalar_first,
                           Tensor (*op)(const Tensor&, const Tensor&)) {
  return node(type, {x}, [=](const std::vector<Tensor>& t) {
    const Tensor s = scalar(v, t[0].device());
    return scalar_first ? op(s, t[0]) : op(t[0], s);
  });
}

}  // namespace

SymbolicTensor add(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("add", a, b, &ops::add); }
SymbolicTensor subtract(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("subtract", a, b, &ops::subtract);
}
SymbolicTensor multiply(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("multiply", a, b, &ops::multiply);
}
SymbolicTensor divide(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("divide", a, b, &ops::divide); }
SymbolicTensor maximum(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("maximum", a, b, &ops::maximum);
}
SymbolicTensor minimum(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("minimum", a, b, &ops::minimum);
}
SymbolicTensor power(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("power", a, b, &ops::power); }
SymbolicTensor power(const SymbolicTensor& a, float exponent) {
  return with_scalar("power", a, exponent, false, &ops::power);
}
SymbolicTensor equal(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("equal", a, b, &ops::equal); }
SymbolicTensor not_equal(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("not_equal", a, b, &ops::not_equal);
}
SymbolicTensor less(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("less", a, b, &ops::less); }
SymbolicTensor less_equal(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("less_equal", a, b, &ops::less_equal);
}
SymbolicTensor greater(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("greater", a, b, &ops::greater);
}
SymbolicTensor greater_equal(const SymbolicTensor& a, const SymbolicTensor& b) {
  return binary("greater_equal", a, b, &ops::greater_equal);
}
SymbolicTensor where(const SymbolicTensor& cond, const SymbolicTensor& a, const SymbolicTensor& b) {
  return node("where", {cond, a, b}, [](const std::vector<Tensor>& t) { return ops::where(t[0], t[1], t[2]); });
}
SymbolicTensor negative(const SymbolicTensor& x) { return unary("negative", x, &ops::negative); }
SymbolicTensor log1p(const SymbolicTensor& x) { return unary("log1p", x, &ops::log1p); }
SymbolicTensor rsqrt(const SymbolicTensor& x) { return unary("rsqrt", x, &ops::rsqrt); }
SymbolicTensor erf(const SymbolicTensor& x) { return unary("erf", x, &ops::erf); }
SymbolicTensor abs(const SymbolicTensor& x) { return unary("abs", x, &ops::abs); }
SymbolicTensor exp(const SymbolicTensor& x) { return unary("exp", x, &ops::exp); }
SymbolicTensor log(const SymbolicTensor& x) { return unary("log", x, &ops::log); }
SymbolicTensor sqrt(const SymbolicTensor& x) { return unary("sqrt", x, &ops::sqrt); }
SymbolicTensor square(const SymbolicTensor& x) { return unary("square", x, &ops::square); }
SymbolicTensor tanh(const SymbolicTensor& x) { return unary("tanh", x, &ops::tanh); }
SymbolicTensor sigmoid(const SymbolicTensor& x) { return unary("sigmoid", x, &ops::sigmoid); }
SymbolicTensor relu(const SymbolicTensor& x) { return unary("relu", x, &ops::relu); }
SymbolicTensor silu(const SymbolicTensor& x) { return unary("silu", x, &ops::silu); }
SymbolicTensor softplus(const SymbolicTensor& x) { return unary("softplus", x, &ops::softplus); }
SymbolicTensor gelu(const SymbolicTensor& x, bool approximate) {
  return node("gelu", {x}, [approximate](const std::vector<Tensor>& t) { return ops::gelu(t[0], approximate); });
}
SymbolicTensor softmax(const SymbolicTensor& x, int axis) {
  return node("softmax", {x}, [axis](const std::vector<Tensor>& t) { return ops::softmax(t[0], axis); });
}
SymbolicTensor clip(const SymbolicTensor& x, float lo, float hi) {
  return node("clip", {x}, [lo, hi](const std::vector<Tensor>& t) { return ops::clip(t[0], lo, hi); });
}
SymbolicTensor sum(const SymbolicTensor& x, std::vector<int> axes, bool keepdims) {
  return reduction("sum", x, std::move(axes), keepdims, &ops::sum);
}
SymbolicTensor mean(const SymbolicTensor& x, std::vector<int> axes, bool keepdims) {
  return reduction("mean", x, std::move(axes), keepdims, &ops::mean);
}

SymbolicTensor max(const SymbolicTensor& x, std::vector<int> axes, bool keepdims) {
  return reduction("max", x, std::move(axes), keepdims, &ops::max);
}
SymbolicTensor min(const SymbolicTensor& x, std::vector<int> axes, bool keepdims) {
  return reduction("min", x, std::move(axes), keepdims, &ops::min);
}
SymbolicTensor logsumexp(const SymbolicTensor& x, std::vector<int> axes, bool keepdims) {
  return reduction("logsumexp", x, std::move(axes), keepdims, &ops::logsumexp);
}
SymbolicTensor log_softmax(const SymbolicTensor& x, int axis) {
  without_batch("log_softmax", x, {axis});
  return node("log_softmax", {x}, [axis](const std::vector<Tensor>& t) { return ops::log_softmax(t[0], axis); });
}
SymbolicTensor cumsum(const SymbolicTensor& x, int axis) {
  without_batch("cumsum", x, {axis});
  return node("cumsum", {x}, [axis](const std::vector<Tensor>& t) { return ops::cumsum(t[0], axis); });
}

SymbolicTensor stack(const std::vector<SymbolicTensor>& xs, int axis) {
  if (!xs.empty() && (axis == 0 || axis == -xs.front().shape().rank() - 1))
    throw std::invalid_argument("ops.stack: axis " + std::to_string(axis) + " would stack along the batch axis, which a "
                                "node keeps first");
  return node("stack", xs, [axis](const std::vector<Tensor>& t) { return ops::stack(t, axis); });
}
SymbolicTensor expand_dims(const SymbolicTensor& x, int axis) {
  if (axis == 0 || axis == -x.shape().rank() - 1)
    throw std::invalid_argument("ops.expand_dims: axis " + std::to_string(axis) + " of " + x.shape().to_string() +
                                " would go before the batch axis, which a node keeps first");
  return node("expand_dims", {x}, [axis](const std::vector<Tensor>& t) { return ops::expand_dims(t[0], axis); });
}
SymbolicTensor squeeze(const SymbolicTensor& x, std::vector<int> axes) {
  axes = without_batch("squeeze", x, std::move(axes));
  return node("squeeze", {x}, [axes](const std::vector<Tensor>& t) { return ops::squeeze(t[0], axes); });
}

namespace {

// Throws naming `op` unless `axis` of x is another than the batch axis; returns it counted from the front.
int non_batch_axis(const char* op, const SymbolicTensor& x, int axis) {
  const int rank = x.shape().rank();
  if (axis < -rank || axis >= rank || axis == 0 || axis == -rank)
    throw std::invalid_argument(std::string("ops.") + op + ": axis " + std::to_string(axis) + " of " +
                                x.shape().to_string() + " is the batch axis or out of range; a node keeps the batch axis");
  return axis < 0 ? axis + rank : axis;
}

// Throws naming `op` unless `per_axis` has one entry per axis of x and `keeps` holds for the batch axis' entry.
template <class T, class Keeps>
void require_batch_kept(const char* op, const SymbolicTensor& x, const std::vector<T>& per_axis, Keeps keeps,
                        const char* what) {
  if (static_cast<int>(per_axis.size()) != x.shape().rank() || !keeps(per_axis.front()))
    throw std::invalid_argument(std::string("ops.") + op + ": give one entry per axis of " + x.shape().to_string() +
                                ", the batch axis' " + what + "; a node keeps the batch axis");
}

}  // namespace

std::vector<SymbolicTensor> split(const SymbolicTensor& x, int sections, int axis) {
  const int k = non_batch_axis("split", x, axis);
  const Index size = x.shape()[k];
  if (sections <= 0 || size % sections != 0)
    throw std::invalid_argument("ops.split: axis " + std::to_string(axis) + " of " + x.shape().to_string() +
                                " does not divide into " + std::to_string(sections) + " equal sections");
  std::vector<SymbolicTensor> parts;
  for (int i = 0; i < sections; ++i) {
    std::vector<Index> start(static_cast<std::size_t>(x.shape().rank()), 0), shape = x.shape().dims();
    shape[0] = -1;
    start[static_cast<std::size_t>(k)] = i * (size / sections);
    shape[static_cast<std::size_t>(k)] = size / sections;
    parts.push_back(node("split", {x}, [start, shape](const std::vector<Tensor>& t) { return ops::slice(t[0], start, shape); }));
  }
  return parts;
}

SymbolicTensor slice(const SymbolicTensor& x, const std::vector<Index>& start_indices, const std::vector<Index>& shape) {
  require_batch_kept("slice", x, start_indices, [](Index v) { return v == 0; }, "start 0");
  require_batch_kept("slice", x, shape, [](Index v) { return v == -1; }, "size -1");
  return node("slice", {x}, [start_indices, shape](const std::vector<Tensor>& t) {
    return ops::slice(t[0], start_indices, shape);
  });
}

SymbolicTensor take(const SymbolicTensor& x, const Tensor& indices, int axis) {
  const int k = non_batch_axis("take", x, axis);
  return node("take", {x}, [indices, k](const std::vector<Tensor>& t) {
    return ops::take(t[0], indices.device() == t[0].device() ? indices : indices.to(t[0].device()), k);
  });
}

SymbolicTensor one_hot(const SymbolicTensor& x, Index num_classes) {
  return node("one_hot", {x}, [num_classes](const std::vector<Tensor>& t) { return ops::one_hot(t[0], num_classes); });
}

SymbolicTensor pad(const SymbolicTensor& x, const std::vector<std::pair<Index, Index>>& pad_width, float constant_value) {
  require_batch_kept("pad", x, pad_width, [](const std::pair<Index, Index>& p) { return p.first == 0 && p.second == 0; },
                     "(0, 0)");
  return node("pad", {x}, [pad_width, constant_value](const std::vector<Tensor>& t) {
    return ops::pad(t[0], pad_width, constant_value);
  });
}

SymbolicTensor tile(const SymbolicTensor& x, const std::vector<Index>& repeats) {
  require_batch_kept("tile", x, repeats, [](Index v) { return v == 1; }, "1");
  return node("tile", {x}, [repeats](const std::vector<Tensor>& t) { return ops::tile(t[0], repeats); });
}

SymbolicTensor repeat(const SymbolicTensor& x, Index repeats, int axis) {
  const int k = non_batch_axis("repeat", x, axis);
  return node("repeat", {x}, [repeats, k](const std::vector<Tensor>& t) { return ops::repeat(t[0], repeats, k); });
}

SymbolicTensor matmul(const SymbolicTensor& a, const SymbolicTensor& b) { return binary("matmul", a, b, &ops::matmul); }

SymbolicTensor reshape(const SymbolicTensor& x, Shape shape) {
  if (shape.rank() == 0 || shape[0] != -1)
    throw std::invalid_argument("ops.reshape: shape " + shape.to_string() + " for " + x.shape().to_string() +
                                " must start with -1, the batch axis, which a node keeps");
  return node("reshape", {x}, [shape](const std::vector<Tensor>& t) { return ops::reshape(t[0], shape); });
}

SymbolicTensor transpose(const SymbolicTensor& x, std::vector<int> perm) {
  if (perm.empty() || perm[0] != 0)
    throw std::invalid_argument("ops.transpose: the axes of a node's transpose of " + x.shape().to_string() +
                                " must start with 0, the batch axis, which a node keeps");
  return node("transpose", {x}, [perm](const std::vector<Tensor>& t) { return ops::transpose(t[0], perm); });
}

SymbolicTensor concatenate(const std::vector<SymbolicTensor>& xs, int axis) {
  if (!xs.empty() && (axis == 0 || axis == -xs.front().shape().rank()))
    throw std::invalid_argument("ops.concatenate: axis " + std::to_string(axis) + " of " + xs.front().shape().to_string() +
                                " is the batch axis, which a node keeps");
  return node("concatenate", xs, [axis](const std::vector<Tensor>& t) { return ops::concatenate(t, axis); });
}

SymbolicTensor einsum(const std::string& equation, const SymbolicTensor& a, const SymbolicTensor& b) {
  return node("einsum", {a, b}, [equation](const std::vector<Tensor>& t) { return ops::einsum(equation, t[0], t[1]); });
}

}  // namespace tower::ops

namespace tower {

SymbolicTensor operator+(const SymbolicTensor& a, const SymbolicTensor& b) { return ops::add(a, b); }
SymbolicTensor operator-(const SymbolicTensor& a, const SymbolicTensor& b) { return ops::subtract(a, b); }
SymbolicTensor operator*(const SymbolicTensor& a, const SymbolicTensor& b) { return ops::multiply(a, b); }
SymbolicTensor operator/(const SymbolicTensor& a, const SymbolicTensor& b) { return ops::divide(a, b); }
SymbolicTensor operator-(const SymbolicTensor& a) { return ops::negative(a); }
SymbolicTensor operator+(const SymbolicTensor& a, float b) { return ops::with_scalar("add", a, b, false, &ops::add); }
SymbolicTensor operator-(const SymbolicTensor& a, float b) {
  return ops::with_scalar("subtract", a, b, false, &ops::subtract);
}
SymbolicTensor operator*(const SymbolicTensor& a, float b) {
  return ops::with_scalar("multiply", a, b, false, &ops::multiply);
}
SymbolicTensor operator/(const SymbolicTensor& a, float b) { return ops::with_scalar("divide", a, b, false, &ops::divide); }
SymbolicTensor operator+(float a, const SymbolicTensor& b) { return ops::with_scalar("add", b, a, true, &ops::add); }
SymbolicTensor operator-(float a, const SymbolicTensor& b) {
  return ops::with_scalar("subtract", b, a, true, &ops::subtract);
}
SymbolicTensor operator*(float a, const SymbolicTensor& b) {
  return ops::with_scalar("multiply", b, a, true, &ops::multiply);
}
SymbolicTensor operator/(float a, const SymbolicTensor& b) { return ops::with_scalar("divide", b, a, true, &ops::divide); }

}  // namespace tower
