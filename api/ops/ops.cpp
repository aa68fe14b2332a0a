#include "api/ops/ops.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/ops/recorder.h"

namespace tower::ops {

namespace {

using backend::ActivationKind;
using backend::BinaryOp;
using backend::UnaryOp;

backend::Backend& be(const Tensor& t) { return backend::get(t.device()); }

std::string where(const std::string& op) { return "ops." + op + ": "; }

void require_float(const std::string& op, const Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(where(op) + what + " is an undefined tensor");
  if (t.dtype() != DType::float32)
    throw std::invalid_argument(where(op) + what + " must be float32, got " + dtype_name(t.dtype()) + " " +
                                t.shape().to_string());
}

void require_same_device(const std::string& op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    throw std::invalid_argument(where(op) + "operands on " + a.device().to_string() + " and " +
                                b.device().to_string() + " (shapes " + a.shape().to_string() + " and " +
                                b.shape().to_string() + "); move one with .to()");
}

// y = a op b with broadcasting, unrecorded.
Tensor binary_raw(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  require_float(name, a, "the first operand");
  require_float(name, b, "the second operand");
  require_same_device(name, a, b);
  const std::string what = std::string("ops.") + name;
  const Shape out = backend::broadcast_shapes(a.shape(), b.shape(), what);
  Tensor y(out, DType::float32, a.device());
  if (y.numel() > 0)
    be(a).broadcast_binary(op, a.data<float>(), b.data<float>(), y.data<float>(),
                           backend::make_broadcast(out, a.shape(), b.shape(), what));
  return y;
}

Tensor unary_raw(UnaryOp op, const Tensor& x) {
  Tensor y(x.shape(), DType::float32, x.device());
  if (y.numel() > 0) be(x).unary(op, x.data<float>(), y.data<float>(), x.numel());
  return y;
}

// g (of a broadcast result's shape) summed onto `shape`: the gradient of an operand that was stretched.
Tensor reduce_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Tensor dx(shape, DType::float32, g.device());
  if (dx.numel() > 0)
    backend::sum_to(be(g), g.data<float>(), g.shape(), dx.data<float>(), shape, "a broadcast's gradient");
  return dx;
}

// Records `output` = op(inputs) with `backward` when a recorder is open.
Tensor recorded(const char* op, std::vector<Tensor> inputs, Tensor output,
                std::function<std::vector<Tensor>(const Tensor&)> backward) {
  if (recording()) record(Record{op, std::move(inputs), output, std::move(backward)});
  return output;
}

Tensor binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw(op, name, a, b);
  if (!recording()) return y;
  const Shape sa = a.shape(), sb = b.shape();
  std::function<std::vector<Tensor>(const Tensor&)> backward;
  switch (op) {
    case BinaryOp::add:
      backward = [sa, sb](const Tensor& g) { return std::vector<Tensor>{reduce_to(g, sa), reduce_to(g, sb)}; };
      break;
    case BinaryOp::subtract:
      backward = [sa, sb](const Tensor& g) {
        return std::vector<Tensor>{reduce_to(g, sa), reduce_to(negative(g), sb)};
      };
      break;
    case BinaryOp::multiply:
      backward = [a, b](const Tensor& g) {
        return std::vector<Tensor>{reduce_to(multiply(g, b), a.shape()), reduce_to(multiply(g, a), b.shape())};
      };
      break;
    case BinaryOp::divide:  // d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 = -y/b
      backward = [a, b, y](const Tensor& g) {
        const Tensor ga = divide(g, b);
        return std::vector<Tensor>{reduce_to(ga, a.shape()), reduce_to(negative(multiply(ga, y)), b.shape())};
      };
      break;
    case BinaryOp::maximum:
    case BinaryOp::minimum:  // a gets the gradient where it is the result (ties included), b elsewhere
      backward = [a, b, y](const Tensor& g) {
        const Tensor to_a = equal(y, a);
        const Tensor ga = multiply(g, to_a), gb = subtract(g, ga);
        return std::vector<Tensor>{reduce_to(ga, a.shape()), reduce_to(gb, b.shape())};
      };
      break;
    case BinaryOp::equal:
      backward = [](const Tensor&) { return std::vector<Tensor>{Tensor(), Tensor()}; };
      break;
  }
  return recorded(name, {a, b}, y, std::move(backward));
}

Tensor activation(ActivationKind kind, const char* name, const Tensor& x) {
  require_float(name, x, "the operand");
  Tensor y(x.shape(), DType::float32, x.device());
  if (y.numel() > 0) be(x).activation_forward(kind, {}, x.data<float>(), y.data<float>(), x.numel());
  return recorded(name, {x}, y, [kind, x, y](const Tensor& g) {
    Tensor dx(x.shape(), DType::float32, x.device());
    if (dx.numel() > 0)
      be(x).activation_backward(kind, {}, x.data<float>(), y.data<float>(), g.data<float>(), dx.data<float>(),
                                x.numel());
    return std::vector<Tensor>{dx};
  });
}

// The axes of `axes` (every axis when empty) as non-negative, sorted, without repeats; throws naming `op`.
std::vector<int> normalized_axes(const char* op, const Shape& shape, std::vector<int> axes) {
  if (axes.empty())
    for (int k = 0; k < shape.rank(); ++k) axes.push_back(k);
  for (int& a : axes) {
    if (a < -shape.rank() || a >= shape.rank())
      throw std::invalid_argument(where(op) + "axis " + std::to_string(a) + " is out of range for shape " +
                                  shape.to_string());
    if (a < 0) a += shape.rank();
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

}  // namespace

Tensor scalar(float value, Device device) {
  Tensor t(Shape{}, DType::float32, device);
  t.fill(value);
  return t;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, "add", a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return binary(BinaryOp::subtract, "subtract", a, b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return binary(BinaryOp::multiply, "multiply", a, b); }
Tensor divide(const Tensor& a, const Tensor& b) { return binary(BinaryOp::divide, "divide", a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, "minimum", a, b); }
Tensor equal(const Tensor& a, const Tensor& b) { return binary(BinaryOp::equal, "equal", a, b); }

Tensor negative(const Tensor& x) {
  require_float("negative", x, "the operand");
  return recorded("negative", {x}, unary_raw(UnaryOp::negative, x),
                  [](const Tensor& g) { return std::vector<Tensor>{negative(g)}; });
}

Tensor abs(const Tensor& x) {
  require_float("abs", x, "the operand");
  return recorded("abs", {x}, unary_raw(UnaryOp::abs, x),
                  [x](const Tensor& g) { return std::vector<Tensor>{multiply(g, sign(x))}; });
}

Tensor sign(const Tensor& x) {
  require_float("sign", x, "the operand");
  return recorded("sign", {x}, unary_raw(UnaryOp::sign, x),
                  [](const Tensor&) { return std::vector<Tensor>{Tensor()}; });
}

Tensor exp(const Tensor& x) {
  require_float("exp", x, "the operand");
  Tensor y = unary_raw(UnaryOp::exp, x);
  return recorded("exp", {x}, y, [y](const Tensor& g) { return std::vector<Tensor>{multiply(g, y)}; });
}

Tensor log(const Tensor& x) {
  require_float("log", x, "the operand");
  return recorded("log", {x}, unary_raw(UnaryOp::log, x),
                  [x](const Tensor& g) { return std::vector<Tensor>{divide(g, x)}; });
}

Tensor sqrt(const Tensor& x) {
  require_float("sqrt", x, "the operand");
  Tensor y = unary_raw(UnaryOp::sqrt, x);
  return recorded("sqrt", {x}, y, [y](const Tensor& g) {
    return std::vector<Tensor>{divide(g, multiply(y, scalar(2.f, y.device())))};
  });
}

Tensor square(const Tensor& x) {
  require_float("square", x, "the operand");
  return recorded("square", {x}, unary_raw(UnaryOp::square, x), [x](const Tensor& g) {
    return std::vector<Tensor>{multiply(g, multiply(x, scalar(2.f, x.device())))};
  });
}

Tensor reciprocal(const Tensor& x) {
  require_float("reciprocal", x, "the operand");
  Tensor y = unary_raw(UnaryOp::reciprocal, x);
  return recorded("reciprocal", {x}, y,
                  [y](const Tensor& g) { return std::vector<Tensor>{negative(multiply(g, square(y)))}; });
}

Tensor tanh(const Tensor& x) { return activation(ActivationKind::tanh, "tanh", x); }
Tensor gelu(const Tensor& x, bool approximate) {
  return activation(approximate ? ActivationKind::gelu_tanh : ActivationKind::gelu, "gelu", x);
}
Tensor silu(const Tensor& x) { return activation(ActivationKind::swish, "silu", x); }
Tensor softplus(const Tensor& x) { return activation(ActivationKind::softplus, "softplus", x); }

Tensor clip(const Tensor& x, float lo, float hi) {
  if (!(lo <= hi))
    throw std::invalid_argument("ops.clip: the bounds " + std::to_string(lo) + " and " + std::to_string(hi) +
                                " are not in order");
  return minimum(maximum(x, scalar(lo, x.device())), scalar(hi, x.device()));
}
Tensor sigmoid(const Tensor& x) { return activation(ActivationKind::sigmoid, "sigmoid", x); }
Tensor relu(const Tensor& x) { return activation(ActivationKind::relu, "relu", x); }

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  require_float("broadcast_to", x, "the operand");
  const Shape out = backend::broadcast_shapes(x.shape(), shape, "ops.broadcast_to");
  if (out != shape)
    throw std::invalid_argument("ops.broadcast_to: " + x.shape().to_string() + " does not broadcast to " +
                                shape.to_string());
  Tensor y(shape, DType::float32, x.device());
  if (y.numel() > 0) {
    const Tensor zero = scalar(0.f, x.device());
    be(x).broadcast_binary(BinaryOp::add, x.data<float>(), zero.data<float>(), y.data<float>(),
                           backend::make_broadcast(shape, x.shape(), Shape{}, "ops.broadcast_to"));
  }
  const Shape from = x.shape();
  return recorded("broadcast_to", {x}, y, [from](const Tensor& g) { return std::vector<Tensor>{reduce_to(g, from)}; });
}

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

Tensor matmul(const Tensor& a, const Tensor& b) {
  require_float("matmul", a, "the first operand");
  require_float("matmul", b, "the second operand");
  require_same_device("matmul", a, b);
  if (a.shape().rank() != 2 || b.shape().rank() != 2 || a.shape()[1] != b.shape()[0])
    throw std::invalid_argument("ops.matmul: shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                                " do not multiply (it takes [m, k] and [k, n])");
  const Index m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  Tensor y(Shape{m, n}, DType::float32, a.device());
  if (y.numel() > 0) {
    if (k == 0)
      y.zero();
    else
      be(a).gemm(false, false, m, n, k, 1.f, a.data<float>(), k, b.data<float>(), n, 0.f, y.data<float>(), n);
  }
  return recorded("matmul", {a, b}, y, [a, b, m, k, n](const Tensor& g) {
    Tensor ga(a.shape(), DType::float32, a.device()), gb(b.shape(), DType::float32, b.device());
    if (ga.numel() > 0) {  // dA = dY B^T, dB = A^T dY
      if (n == 0) ga.zero();
      else be(g).gemm(false, true, m, k, n, 1.f, g.data<float>(), n, b.data<float>(), n, 0.f, ga.data<float>(), k);
    }
    if (gb.numel() > 0) {
      if (m == 0) gb.zero();
      else be(g).gemm(true, false, k, n, m, 1.f, a.data<float>(), k, g.data<float>(), n, 0.f, gb.data<float>(), n);
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Tensor stop_gradient(const Tensor& x) {
  require_float("stop_gradient", x, "the operand");
  return x.clone();  // not recorded: a constant to every tape
}

}  // namespace tower::ops

namespace tower {

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::divide(a, b); }
Tensor operator-(const Tensor& a) { return ops::negative(a); }
Tensor operator+(const Tensor& a, float b) { return ops::add(a, ops::scalar(b, a.device())); }
Tensor operator-(const Tensor& a, float b) { return ops::subtract(a, ops::scalar(b, a.device())); }
Tensor operator*(const Tensor& a, float b) { return ops::multiply(a, ops::scalar(b, a.device())); }
Tensor operator/(const Tensor& a, float b) { return ops::divide(a, ops::scalar(b, a.device())); }
Tensor operator+(float a, const Tensor& b) { return ops::add(ops::scalar(a, b.device()), b); }
Tensor operator-(float a, const Tensor& b) { return ops::subtract(ops::scalar(a, b.device()), b); }
Tensor operator*(float a, const Tensor& b) { return ops::multiply(ops::scalar(a, b.device()), b); }
Tensor operator/(float a, const Tensor& b) { return ops::divide(ops::scalar(a, b.device()), b); }

}  // namespace tower
