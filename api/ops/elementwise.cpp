// The element-wise ops: broadcasting binary ops through Backend::broadcast_binary, one-operand functions through
// Backend::unary and activation_forward, and the operators.
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

namespace {

using backend::ActivationKind;
using backend::BinaryOp;
using backend::UnaryOp;

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
    case BinaryOp::power:  // TensorFlow's: b a^(b-1) for a; y log(a) for b where a > 0, 0 elsewhere
      backward = [a, b, y](const Tensor& g) {
        const Tensor zero = scalar(0.f, a.device());
        const Tensor ga = multiply(g, multiply(b, power(a, subtract(b, scalar(1.f, b.device())))));
        const Tensor log_a = where(greater(a, zero), log(a), zero);
        return std::vector<Tensor>{reduce_to(ga, a.shape()), reduce_to(multiply(g, multiply(y, log_a)), b.shape())};
      };
      break;
    case BinaryOp::equal:
    case BinaryOp::not_equal:
    case BinaryOp::less:
    case BinaryOp::less_equal:
    case BinaryOp::greater:
    case BinaryOp::greater_equal:
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
Tensor power(const Tensor& a, const Tensor& b) { return binary(BinaryOp::power, "power", a, b); }
Tensor power(const Tensor& a, float exponent) {
  require_float("power", a, "the first operand");
  return power(a, scalar(exponent, a.device()));
}
Tensor equal(const Tensor& a, const Tensor& b) { return binary(BinaryOp::equal, "equal", a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary(BinaryOp::not_equal, "not_equal", a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return binary(BinaryOp::less, "less", a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary(BinaryOp::less_equal, "less_equal", a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary(BinaryOp::greater, "greater", a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::greater_equal, "greater_equal", a, b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  require_float("where", cond, "the condition");
  require_float("where", a, "the first operand");
  require_float("where", b, "the second operand");
  require_same_device("where", cond, a);
  require_same_device("where", a, b);
  const Shape pair = backend::broadcast_shapes(cond.shape(), a.shape(), "ops.where");
  const Shape out = backend::broadcast_shapes(pair, b.shape(), "ops.where");
  const Tensor c = stretched(cond, out, "ops.where"), ta = stretched(a, out, "ops.where"),
               tb = stretched(b, out, "ops.where");
  Tensor y(out, DType::float32, a.device());
  if (y.numel() > 0) be(a).select(c.data<float>(), ta.data<float>(), tb.data<float>(), y.data<float>(), y.numel());
  const Shape sa = a.shape(), sb = b.shape();
  return recorded("where", {cond, a, b}, y, [c, sa, sb](const Tensor& g) {
    const Tensor zero = scalar(0.f, g.device());
    return std::vector<Tensor>{Tensor(), reduce_to(where(c, g, zero), sa), reduce_to(where(c, zero, g), sb)};
  });
}

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

Tensor log1p(const Tensor& x) {
  require_float("log1p", x, "the operand");
  return recorded("log1p", {x}, unary_raw(UnaryOp::log1p, x), [x](const Tensor& g) {
    return std::vector<Tensor>{divide(g, add(x, scalar(1.f, x.device())))};
  });
}

Tensor rsqrt(const Tensor& x) {
  require_float("rsqrt", x, "the operand");
  Tensor y = unary_raw(UnaryOp::rsqrt, x);
  return recorded("rsqrt", {x}, y, [y](const Tensor& g) {  // d x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2
    return std::vector<Tensor>{multiply(g, multiply(square(y), multiply(y, scalar(-0.5f, y.device()))))};
  });
}

Tensor erf(const Tensor& x) {
  require_float("erf", x, "the operand");
  return recorded("erf", {x}, unary_raw(UnaryOp::erf, x), [x](const Tensor& g) {  // 2 / sqrt(pi) exp(-x^2)
    return std::vector<Tensor>{
        multiply(g, multiply(exp(negative(square(x))), scalar(1.1283791670955126f, x.device())))};
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
