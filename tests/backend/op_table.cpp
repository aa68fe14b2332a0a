#include "backend/op_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <string>

#include "api/backend/broadcast.h"
#include "api/core/device_memory.h"
#include "api/core/tensor.h"
#include "backend/backend_testing.h"
#include "backend/optimizer_reference.h"

namespace tower::testing {

using backend::ActivationKind;
using backend::ActivationParams;
using backend::Backend;
using backend::BatchNormParams;
using backend::BinaryOp;
using backend::Broadcast;
using backend::make_broadcast;
using backend::Conv2DParams;
using backend::PoolKind;
using backend::Pool2DParams;
using Ptrs = std::vector<float*>;
using Sizes = std::vector<Index>;

namespace {

std::string str(Index v) { return std::to_string(v); }

// ---- element-wise ------------------------------------------------------------------------------------------

void elementwise_cases(std::vector<OpCase>& t) {
  const Index n = 1003;
  t.push_back({"fill", "fill(n=1003, 0.37)", {}, {n}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs&, const Ptrs& o) { be.fill(o[0], n, 0.37f); },
               [](OpBuffers& b) { std::fill(b.out[0].begin(), b.out[0].end(), 0.37f); }});
  t.push_back({"fill_bytes", "fill_bytes(1003 floats, 0)", {}, {n}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs&, const Ptrs& o) { be.fill_bytes(o[0], n * sizeof(float), 0); },
               [](OpBuffers& b) { std::fill(b.out[0].begin(), b.out[0].end(), 0.f); }});
  const auto binary = [&](const char* op, float (*f)(float, float),
                          void (Backend::*m)(const float*, const float*, float*, Index)) {
    t.push_back({op, std::string(op) + "(n=1003)", {n, n}, {n}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { (be.*m)(i[0], i[1], o[0], n); },
                 [=](OpBuffers& b) {
                   for (Index k = 0; k < n; ++k) b.out[0][k] = f(b.in[0][k], b.in[1][k]);
                 }});
  };
  binary("add", [](float a, float b) { return a + b; }, &Backend::add);
  binary("sub", [](float a, float b) { return a - b; }, &Backend::sub);
  binary("mul", [](float a, float b) { return a * b; }, &Backend::mul);
  {
    const std::pair<backend::UnaryOp, const char*> unary[] = {
        {backend::UnaryOp::negative, "negative"}, {backend::UnaryOp::abs, "abs"},   {backend::UnaryOp::sign, "sign"},
        {backend::UnaryOp::exp, "exp"},           {backend::UnaryOp::log, "log"},   {backend::UnaryOp::sqrt, "sqrt"},
        {backend::UnaryOp::square, "square"},     {backend::UnaryOp::reciprocal, "reciprocal"},
        {backend::UnaryOp::log1p, "log1p"},       {backend::UnaryOp::rsqrt, "rsqrt"},
        {backend::UnaryOp::erf, "erf"}};
    for (const auto& [op, name] : unary) {
      const bool positive = op == backend::UnaryOp::log || op == backend::UnaryOp::sqrt ||
                            op == backend::UnaryOp::log1p || op == backend::UnaryOp::rsqrt;
      t.push_back({"unary", std::string("unary ") + name + "(n=1003)", {n}, {n}, positive ? 0.1f : -2.f, 2.f, false,
                   1e-6, [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.unary(op, i[0], o[0], n); },
                   [=](OpBuffers& b) {
                     for (Index k = 0; k < n; ++k) {
                       const double v = b.in[0][k];
                       double r = 0;
                       switch (op) {
                         case backend::UnaryOp::negative: r = -v; break;
                         case backend::UnaryOp::abs: r = std::fabs(v); break;
                         case backend::UnaryOp::sign: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
                         case backend::UnaryOp::exp: r = std::exp(v); break;
                         case backend::UnaryOp::log: r = std::log(v); break;
                         case backend::UnaryOp::sqrt: r = std::sqrt(v); break;
                         case backend::UnaryOp::square: r = v * v; break;
                         case backend::UnaryOp::reciprocal: r = 1 / v; break;
                         case backend::UnaryOp::log1p: r = std::log1p(v); break;
                         case backend::UnaryOp::rsqrt: r = 1 / std::sqrt(v); break;
                         case backend::UnaryOp::erf: r = std::erf(v); break;
                       }
                       b.out[0][k] = float(r);
                     }
                   }});
    }
  }
  // Broadcasting: a [3, 1, 5] against b [4, 1], both stretched to [3, 4, 5]; each op, and the reduction of a
  // [3, 4, 5] gradient onto either operand.
  {
    const Shape out{3, 4, 5}, sa{3, 1, 5}, sb{4, 1};
    const Broadcast s = make_broadcast(out, sa, sb, "op table");
    const Index na = sa.numel(), nb = sb.numel(), ny = out.numel();
    const auto at = [](const Shape& operand, Index i, Index j, Index k) {  // operand's element at out's (i, j, k)
      const int r = operand.rank();
      const Index c[3] = {i, j, k};
      Index offset = 0;
      for (int d = 0; d < r; ++d) offset = offset * operand.dims()[d] + (operand.dims()[d] == 1 ? 0 : c[3 - r + d]);
      return offset;
    };
    const std::pair<BinaryOp, const char*> ops[] = {{BinaryOp::add, "add"},           {BinaryOp::subtract, "subtract"},
                                                    {BinaryOp::multiply, "multiply"}, {BinaryOp::divide, "divide"},
                                                    {BinaryOp::maximum, "maximum"},   {BinaryOp::minimum, "minimum"},
                                                    {BinaryOp::equal, "equal"},       {BinaryOp::power, "power"},
                                                    {BinaryOp::not_equal, "not_equal"}, {BinaryOp::less, "less"},
                                                    {BinaryOp::less_equal, "less_equal"},
                                                    {BinaryOp::greater, "greater"},
                                                    {BinaryOp::greater_equal, "greater_equal"}};
    for (const auto& [op, name] : ops)
      t.push_back({"broadcast_binary", std::string("broadcast_binary ") + name + " [3,1,5] with [4,1]", {na, nb}, {ny},
                   0.5f, 1.5f, false, 1e-6,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.broadcast_binary(op, i[0], i[1], o[0], s); },
                   [=](OpBuffers& b) {
                     for (Index i = 0; i < 3; ++i)
                       for (Index j = 0; j < 4; ++j)
                         for (Index k = 0; k < 5; ++k) {
                           const float x = b.in[0][at(sa, i, j, k)], y = b.in[1][at(sb, i, j, k)];
                           float v = 0;
                           switch (op) {
                             case BinaryOp::add: v = x + y; break;
                             case BinaryOp::subtract: v = x - y; break;
                             case BinaryOp::multiply: v = x * y; break;
                             case BinaryOp::divide: v = x / y; break;
                             case BinaryOp::maximum: v = std::max(x, y); break;
                             case BinaryOp::minimum: v = std::min(x, y); break;
                             case BinaryOp::equal: v = x == y ? 1.f : 0.f; break;
                             case BinaryOp::power: v = float(std::pow(double(x), double(y))); break;
                             case BinaryOp::not_equal: v = x != y ? 1.f : 0.f; break;
                             case BinaryOp::less: v = x < y ? 1.f : 0.f; break;
                             case BinaryOp::less_equal: v = x <= y ? 1.f : 0.f; break;
                             case BinaryOp::greater: v = x > y ? 1.f : 0.f; break;
                             case BinaryOp::greater_equal: v = x >= y ? 1.f : 0.f; break;
                           }
                           b.out[0][(i * 4 + j) * 5 + k] = v;
                         }
                   }});
    for (const bool first : {true, false}) {
      const Shape operand = first ? sa : sb;
      Broadcast r = s;
      if (!first) std::copy(std::begin(s.b), std::end(s.b), std::begin(r.a));
      t.push_back({"broadcast_reduce", "broadcast_reduce [3,4,5] onto " + operand.to_string(), {ny},
                   {operand.numel()}, -1, 1, false, 1e-6,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.broadcast_reduce(i[0], o[0], r); },
                   [=](OpBuffers& b) {
                     std::vector<double> acc(static_cast<std::size_t>(operand.numel()), 0.0);
                     for (Index i = 0; i < 3; ++i)
                       for (Index j = 0; j < 4; ++j)
                         for (Index k = 0; k < 5; ++k) acc[at(operand, i, j, k)] += b.in[0][(i * 4 + j) * 5 + k];
                     for (std::size_t e = 0; e < acc.size(); ++e) b.out[0][e] = float(acc[e]);
                   }});
    }
  }
  for (const float beta : {0.f, 0.5f})
    t.push_back({"axpby", "axpby(n=1003, alpha=-0.7, beta=" + std::to_string(beta) + ")", {n}, {n}, -1, 1, false,
                 1e-6, [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.axpby(-0.7f, i[0], beta, o[0], n); },
                 [=](OpBuffers& b) {
                   for (Index k = 0; k < n; ++k)
                     b.out[0][k] = -0.7f * b.in[0][k] + (beta == 0.f ? 0.f : beta * b.out[0][k]);
                 }});
  t.push_back({"scale_shift", "scale_shift(n=1003, 1/255, -0.5)", {n}, {n}, -1, 1, false, 1e-6,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.scale_shift(i[0], 1.f / 255, -0.5f, o[0], n); },
               [=](OpBuffers& b) {
                 for (Index k = 0; k < n; ++k) b.out[0][k] = (1.f / 255) * b.in[0][k] - 0.5f;
               }});
  const Index rows = 1001, cols = 7;
  t.push_back({"add_bias", "add_bias(1001x7)", {cols}, {rows * cols}, -1, 1, false, 1e-6,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.add_bias(o[0], i[0], rows, cols); },
               [=](OpBuffers& b) {
                 for (Index r = 0; r < rows; ++r)
                   for (Index c = 0; c < cols; ++c) b.out[0][r * cols + c] += b.in[0][c];
               }});
  t.push_back({"bias_grad", "bias_grad(1001x7)", {rows * cols}, {cols}, -1, 1, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.bias_grad(i[0], o[0], rows, cols); },
               [=](OpBuffers& b) {
                 for (Index c = 0; c < cols; ++c) {
                   double s = 0;
                   for (Index r = 0; r < rows; ++r) s += b.in[0][r * cols + c];
                   b.out[0][c] = static_cast<float>(s);
                 }
               }});
  t.push_back({"sum", "sum(n=100003)", {100003}, {1}, -1, 1, false, 1e-5,
               [](Backend& be, const Ptrs& i, const Ptrs& o) { be.sum(i[0], o[0], 100003); },
               [](OpBuffers& b) {
                 double s = 0;
                 for (float v : b.in[0]) s += v;
                 b.out[0][0] = static_cast<float>(s);
               }});
}

// ---- activations ----------------------------------------------------------------------------------------------

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
constexpr double kSeluAlpha = 1.6732632423543772, kSeluScale = 1.0507009873554805;

double activate(ActivationKind k, const ActivationParams& p, double v) {
  switch (k) {
    case ActivationKind::linear: return v;
    case ActivationKind::relu: {
      const double cap = p.max_value < 0 ? INFINITY : p.max_value;
      return v >= p.threshold ? std::min(cap, v) : p.alpha * (v - p.threshold);
    }
    case ActivationKind::sigmoid: return sigmoid(v);
    case ActivationKind::tanh: return std::tanh(v);
    case ActivationKind::gelu: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case ActivationKind::gelu_tanh:
      return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    case ActivationKind::swish: return v * sigmoid(v);
    case ActivationKind::elu: return v > 0 ? v : p.alpha * std::expm1(v);
    case ActivationKind::leaky_relu: return v > 0 ? v : p.alpha * v;
    case ActivationKind::selu: return kSeluScale * (v > 0 ? v : kSeluAlpha * std::expm1(v));
    case ActivationKind::softplus: return std::log1p(std::exp(v));
    case ActivationKind::softsign: return v / (1 + std::fabs(v));
    case ActivationKind::hard_sigmoid: return std::clamp(v / 6 + 0.5, 0.0, 1.0);
    case ActivationKind::exponential: return std::exp(v);
  }
  return v;
}

// d activation / dx at x, given the forward output y (as the backend receives it).
double derivative(ActivationKind k, const ActivationParams& p, double v, double y) {
  switch (k) {
    case ActivationKind::linear: return 1;
    case ActivationKind::relu: {
      const double cap = p.max_value < 0 ? INFINITY : p.max_value;
      return v > p.threshold ? (v < cap ? 1 : 0) : p.alpha;
    }
    case ActivationKind::sigmoid: return y * (1 - y);
    case ActivationKind::tanh: return 1 - y * y;
    case ActivationKind::gelu:
      return 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
    case ActivationKind::gelu_tanh: {
      const double c = std::sqrt(2 / M_PI), th = std::tanh(c * (v + 0.044715 * v * v * v));
      return 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * c * (1 + 3 * 0.044715 * v * v);
    }
    case ActivationKind::swish: return sigmoid(v) * (1 + v * (1 - sigmoid(v)));
    case ActivationKind::elu: return v > 0 ? 1 : y + p.alpha;
    case ActivationKind::leaky_relu: return v > 0 ? 1 : p.alpha;
    case ActivationKind::selu: return v > 0 ? kSeluScale : y + kSeluScale * kSeluAlpha;
    case ActivationKind::softplus: return sigmoid(v);
    case ActivationKind::softsign: return 1 / ((1 + std::fabs(v)) * (1 + std::fabs(v)));
    case ActivationKind::hard_sigmoid: return v > -3 && v < 3 ? 1.0 / 6 : 0;
    case ActivationKind::exponential: return y;
  }
  return 1;
}

void activation_cases(std::vector<OpCase>& t) {
  const Index n = 999;
  struct Variant {
    ActivationKind kind;
    const char* name;
    ActivationParams p;
  };
  const Variant variants[] = {
      {ActivationKind::linear, "linear", {}},
      {ActivationKind::relu, "relu", {}},
      {ActivationKind::relu, "relu(max 2, threshold 0.5, slope 0.1)", {0.1f, 2.f, 0.5f}},
      {ActivationKind::sigmoid, "sigmoid", {}},
      {ActivationKind::tanh, "tanh", {}},
      {ActivationKind::gelu, "gelu", {}},
      {ActivationKind::gelu_tanh, "gelu_tanh", {}},
      {ActivationKind::swish, "swish", {}},
      {ActivationKind::elu, "elu(0.7)", {0.7f}},
      {ActivationKind::leaky_relu, "leaky_relu(0.2)", {0.2f}},
      {ActivationKind::selu, "selu", {}},
      {ActivationKind::softplus, "softplus", {}},
      {ActivationKind::softsign, "softsign", {}},
      {ActivationKind::hard_sigmoid, "hard_sigmoid", {}},
      {ActivationKind::exponential, "exponential", {}},
  };
  for (const Variant& v : variants) {
    t.push_back({"activation_forward", std::string("activation_forward(") + v.name + ", n=999)", {n}, {n}, -4, 4,
                 false, 2e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.activation_forward(v.kind, v.p, i[0], o[0], n); },
                 [=](OpBuffers& b) {
                   for (Index k = 0; k < n; ++k) b.out[0][k] = static_cast<float>(activate(v.kind, v.p, b.in[0][k]));
                 }});
    t.push_back({"activation_backward", std::string("activation_backward(") + v.name + ", n=999)", {n, n, n}, {n},
                 -4, 4, false, 2e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.activation_backward(v.kind, v.p, i[0], i[1], i[2], o[0], n);
                 },
                 [=](OpBuffers& b) {
                   for (Index k = 0; k < n; ++k)
                     b.out[0][k] = static_cast<float>(derivative(v.kind, v.p, b.in[0][k], b.in[1][k]) * b.in[2][k]);
                 }});
  }
}

// ---- softmax, dropout ------------------------------------------------------------------------------------------

void softmax_cases(std::vector<OpCase>& t) {
  for (const Index inner : {Index{1}, Index{3}}) {
    const Index outer = 5, axis = 11, n = outer * axis * inner;
    const std::string shape = "[" + str(outer) + "," + str(axis) + "," + str(inner) + "]";
    t.push_back({"softmax_forward", "softmax_forward(" + shape + ")", {n}, {n}, -5, 5, false, 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.softmax_forward(i[0], o[0], outer, axis, inner); },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < outer; ++a)
                     for (Index c = 0; c < inner; ++c) {
                       const auto at = [&](Index k) { return a * axis * inner + k * inner + c; };
                       double m = -INFINITY, s = 0;
                       for (Index k = 0; k < axis; ++k) m = std::max(m, double(b.in[0][at(k)]));
                       for (Index k = 0; k < axis; ++k) s += std::exp(b.in[0][at(k)] - m);
                       for (Index k = 0; k < axis; ++k) b.out[0][at(k)] = float(std::exp(b.in[0][at(k)] - m) / s);
                     }
                 }});
    t.push_back({"softmax_backward", "softmax_backward(" + shape + ")", {n, n}, {n}, -1, 1, false, 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.softmax_backward(i[0], i[1], o[0], outer, axis, inner);
                 },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < outer; ++a)
                     for (Index c = 0; c < inner; ++c) {
                       const auto at = [&](Index k) { return a * axis * inner + k * inner + c; };
                       double dot = 0;
                       for (Index k = 0; k < axis; ++k) dot += double(b.in[0][at(k)]) * b.in[1][at(k)];
                       for (Index k = 0; k < axis; ++k) b.out[0][at(k)] = float(b.in[0][at(k)] * (b.in[1][at(k)] - dot));
                     }
                 }});
  }
}

// ---- local response normalization ------------------------------------------------------------------------------

// bias + alpha * the sum of the squares of row[d - r .. d + r] that exist, in double.
double lrn_norm(const float* row, Index d, Index depth, const backend::LrnParams& p) {
  double s = 0;
  for (Index k = std::max<Index>(0, d - p.depth_radius); k <= std::min(depth - 1, d + p.depth_radius); ++k)
    s += double(row[k]) * row[k];
  return p.bias + double(p.alpha) * s;
}

void lrn_cases(std::vector<OpCase>& t) {
  const Index positions = 37;
  struct Case {
    Index depth;
    backend::LrnParams p;
  };
  // A radius inside the channels, one beyond them, and the CIFAR-10 model's norm1 (64 channels).
  for (const Case& c : {Case{13, {4, 1.f, 0.3f, 0.75f}}, Case{5, {7, 0.5f, 1.f, 1.25f}},
                        Case{64, {4, 1.f, 0.001f / 9, 0.75f}}}) {
    const Index depth = c.depth;
    const backend::LrnParams p = c.p;
    const Index n = positions * depth;
    const std::string args = "[" + str(positions) + "," + str(depth) + "], depth_radius=" + str(p.depth_radius);
    t.push_back({"lrn_forward", "lrn_forward(" + args + ")", {n}, {n}, -3, 3, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.lrn_forward(p, i[0], o[0], positions, depth); },
                 [=](OpBuffers& b) {
                   for (Index i = 0; i < n; ++i) {
                     const float* row = b.in[0].data() + (i - i % depth);
                     b.out[0][i] = float(b.in[0][i] / std::pow(lrn_norm(row, i % depth, depth, p), double(p.beta)));
                   }
                 }});
    // TensorFlow's LRNGrad, its loop written out: each channel j sends its gradient to the channels k of its window.
    t.push_back({"lrn_backward", "lrn_backward(" + args + ")", {n, n, n}, {n}, -2, 2, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.lrn_backward(p, i[0], i[1], i[2], o[0], positions, depth);
                 },
                 [=](OpBuffers& b) {
                   const std::vector<float>& x = b.in[0];
                   const std::vector<float>& y = b.in[1];
                   const std::vector<float>& dy = b.in[2];
                   std::vector<double> dx(static_cast<std::size_t>(n), 0.0);
                   for (Index row = 0; row < n; row += depth)
                     for (Index j = 0; j < depth; ++j) {
                       const double norm = lrn_norm(x.data() + row, j, depth, p);
                       const Index last = std::min(depth - 1, j + p.depth_radius);
                       for (Index k = std::max<Index>(0, j - p.depth_radius); k <= last; ++k) {
                         double g = -2.0 * p.alpha * p.beta * x[row + k] * y[row + j] / norm;
                         if (k == j) g += std::pow(norm, -double(p.beta));
                         dx[row + k] += g * dy[row + j];
                       }
                     }
                   for (Index i = 0; i < n; ++i) b.out[0][i] = float(dx[i]);
                 }});
  }
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void dropout_cases(std::vector<OpCase>& t) {
  const Index n = 4099;
  // The mask is a function of (seed, index), the same on every device: keep when the top 24 bits of
  // splitmix64(splitmix64(seed) ^ i), as a uniform in [0, 1), reach the rate. The seed is read from device
  // memory: the bits of the case's two random input floats, copied into a 64-bit word there.
  t.push_back({"dropout_mask", "dropout_mask(n=4099, rate=0.3)", {2}, {n}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 const Tensor seed(Shape{1}, DType::int64, be.device());
                 copy_bytes(seed.raw_data(), be.device(), i[0], be.device(), sizeof(std::uint64_t));
                 be.dropout_mask(o[0], n, 0.3f, reinterpret_cast<const std::uint64_t*>(seed.data<std::int64_t>()));
               },
               [=](OpBuffers& b) {
                 std::uint64_t seed = 0;
                 std::memcpy(&seed, b.in[0].data(), sizeof seed);
                 const std::uint64_t salt = splitmix64(seed);
                 for (Index i = 0; i < n; ++i) {
                   const float u = float(splitmix64(salt ^ std::uint64_t(i)) >> 40) / 16777216.f;
                   b.out[0][i] = u >= 0.3f ? 1.f / (1.f - 0.3f) : 0.f;
                 }
               }});
}

// ---- data movement -------------------------------------------------------------------------------------------------

void layout_cases(std::vector<OpCase>& t) {
  {
    const Shape shape{3, 5, 7, 2};
    const std::vector<int> perm{2, 0, 3, 1};
    const Index n = shape.numel();
    t.push_back({"transpose", "transpose([3,5,7,2], {2,0,3,1})", {n}, {n}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.transpose(i[0], o[0], shape, perm); },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < 3; ++a)
                     for (Index c = 0; c < 5; ++c)
                       for (Index d = 0; d < 7; ++d)
                         for (Index e = 0; e < 2; ++e) {
                           const Index idx[4] = {a, c, d, e};
                           const Index out = ((idx[2] * 3 + idx[0]) * 2 + idx[3]) * 5 + idx[1];
                           b.out[0][out] = b.in[0][((a * 5 + c) * 7 + d) * 2 + e];
                         }
                 }});
  }
  {
    // The last axis kept (rows of 17 moved whole on the CPU): attention's [N, T, heads, dim] -> [N, heads, T, dim].
    const Shape shape{3, 5, 4, 17};
    const std::vector<int> perm{0, 2, 1, 3};
    const Index n = shape.numel();
    t.push_back({"transpose", "transpose([3,5,4,17], {0,2,1,3})", {n}, {n}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.transpose(i[0], o[0], shape, perm); },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < 3; ++a)
                     for (Index c = 0; c < 5; ++c)
                       for (Index d = 0; d < 4; ++d)
                         for (Index e = 0; e < 17; ++e)
                           b.out[0][((a * 4 + d) * 5 + c) * 17 + e] = b.in[0][((a * 5 + c) * 4 + d) * 17 + e];
                 }});
  }
  const Index outer = 7, narrow = 5, wide = 12, offset = 4;
  t.push_back({"copy_strided", "copy_strided([7,5] into [7,12] at 4)", {outer * narrow}, {outer * wide}, -1, 1,
               false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.copy_strided(i[0], narrow, o[0], wide, offset, outer); },
               [=](OpBuffers& b) {
                 for (Index r = 0; r < outer; ++r)
                   for (Index c = 0; c < narrow; ++c) b.out[0][r * wide + offset + c] = b.in[0][r * narrow + c];
               }});
  t.push_back({"copy_strided_back", "copy_strided_back([7,12] at 4 into [7,5])", {outer * wide}, {outer * narrow},
               -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.copy_strided_back(i[0], wide, offset, o[0], narrow, outer);
               },
               [=](OpBuffers& b) {
                 for (Index r = 0; r < outer; ++r)
                   for (Index c = 0; c < narrow; ++c) b.out[0][r * narrow + c] = b.in[0][r * wide + offset + c];
               }});
  struct Pad {
    Index out_h, out_w, top, left;
  };
  const Index n = 2, h = 5, w = 6, c = 3;
  for (const Pad p : {Pad{8, 9, 2, 1}, Pad{3, 3, -1, -2}}) {
    const std::string what = "[2,5,6,3] -> [2," + str(p.out_h) + "," + str(p.out_w) + ",3] at (" + str(p.top) + "," +
                             str(p.left) + ")";
    const auto inside = [=](Index oh, Index ow) {
      const Index ih = oh - p.top, iw = ow - p.left;
      return ih >= 0 && ih < h && iw >= 0 && iw < w;
    };
    t.push_back({"pad2d", "pad2d(" + what + ")", {n * h * w * c}, {n * p.out_h * p.out_w * c}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.pad2d(i[0], o[0], n, h, w, c, p.out_h, p.out_w, p.top, p.left);
                 },
                 [=](OpBuffers& b) {
                   for (Index bi = 0; bi < n; ++bi)
                     for (Index oh = 0; oh < p.out_h; ++oh)
                       for (Index ow = 0; ow < p.out_w; ++ow)
                         for (Index k = 0; k < c; ++k)
                           b.out[0][((bi * p.out_h + oh) * p.out_w + ow) * c + k] =
                               inside(oh, ow) ? b.in[0][((bi * h + oh - p.top) * w + ow - p.left) * c + k] : 0.f;
                 }});
    t.push_back({"pad2d_backward", "pad2d_backward(" + what + ")", {n * p.out_h * p.out_w * c}, {n * h * w * c}, -1,
                 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.pad2d_backward(i[0], o[0], n, h, w, c, p.out_h, p.out_w, p.top, p.left);
                 },
                 [=](OpBuffers& b) {
                   for (Index bi = 0; bi < n; ++bi)
                     for (Index ih = 0; ih < h; ++ih)
                       for (Index iw = 0; iw < w; ++iw)
                         for (Index k = 0; k < c; ++k) {
                           const Index oh = ih + p.top, ow = iw + p.left;
                           const bool in = oh >= 0 && oh < p.out_h && ow >= 0 && ow < p.out_w;
                           b.out[0][((bi * h + ih) * w + iw) * c + k] =
                               in ? b.in[0][((bi * p.out_h + oh) * p.out_w + ow) * c + k] : 0.f;
                         }
                 }});
  }
  const Index uh = 3, uw = 4, uc = 5;
  const int fh = 2, fw = 3;
  const Index x_size = n * uh * uw * uc, y_size = x_size * fh * fw;
  t.push_back({"upsample2d", "upsample2d([2,3,4,5] by 2x3)", {x_size}, {y_size}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.upsample2d(i[0], o[0], n, uh, uw, uc, fh, fw); },
               [=](OpBuffers& b) {
                 for (Index bi = 0; bi < n; ++bi)
                   for (Index oh = 0; oh < uh * fh; ++oh)
                     for (Index ow = 0; ow < uw * fw; ++ow)
                       for (Index k = 0; k < uc; ++k)
                         b.out[0][((bi * uh * fh + oh) * uw * fw + ow) * uc + k] =
                             b.in[0][((bi * uh + oh / fh) * uw + ow / fw) * uc + k];
               }});
  t.push_back({"upsample2d_backward", "upsample2d_backward([2,3,4,5] by 2x3)", {y_size}, {x_size}, -1, 1, false, 1e-6,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.upsample2d_backward(i[0], o[0], n, uh, uw, uc, fh, fw);
               },
               [=](OpBuffers& b) {
                 std::fill(b.out[0].begin(), b.out[0].end(), 0.f);
                 for (Index bi = 0; bi < n; ++bi)
                   for (Index oh = 0; oh < uh * fh; ++oh)
                     for (Index ow = 0; ow < uw * fw; ++ow)
                       for (Index k = 0; k < uc; ++k)
                         b.out[0][((bi * uh + oh / fh) * uw + ow / fw) * uc + k] +=
                             b.in[0][((bi * uh * fh + oh) * uw * fw + ow) * uc + k];
               }});
}

// ---- global pooling ------------------------------------------------------------------------------------------

void global_pool_cases(std::vector<OpCase>& t) {
  const Index n = 3, positions = 17, c = 5;
  for (const PoolKind kind : {PoolKind::average, PoolKind::max}) {
    const bool avg = kind == PoolKind::average;
    const std::string name = avg ? "average" : "max";
    const auto pool = [=](const std::vector<float>& x, std::vector<float>& y) {
      for (Index b = 0; b < n; ++b)
        for (Index k = 0; k < c; ++k) {
          double acc = avg ? 0.0 : -INFINITY;
          for (Index p = 0; p < positions; ++p) {
            const double v = x[(b * positions + p) * c + k];
            acc = avg ? acc + v : std::max(acc, v);
          }
          y[b * c + k] = float(avg ? acc / positions : acc);
        }
    };
    t.push_back({"global_pool", "global_pool(" + name + ", [3,17,5])", {n * positions * c}, {n * c}, -1, 1, !avg,
                 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.global_pool(kind, i[0], o[0], n, positions, c); },
                 [=](OpBuffers& b) { pool(b.in[0], b.out[0]); }});
    // Backward needs the forward output: the case runs both (out[0] = y, out[1] = dx).
    t.push_back({"global_pool_backward", "global_pool_backward(" + name + ", [3,17,5])", {n * positions * c, n * c},
                 {n * c, n * positions * c}, -1, 1, !avg, 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.global_pool(kind, i[0], o[0], n, positions, c);
                   be.global_pool_backward(kind, i[0], o[0], i[1], o[1], n, positions, c);
                 },
                 [=](OpBuffers& b) {
                   pool(b.in[0], b.out[0]);
                   for (Index bi = 0; bi < n; ++bi)
                     for (Index k = 0; k < c; ++k) {
                       bool routed = false;
                       for (Index p = 0; p < positions; ++p) {
                         const Index at = (bi * positions + p) * c + k;
                         float d = 0.f;
                         if (avg) {
                           d = b.in[1][bi * c + k] / float(positions);
                         } else if (!routed && b.in[0][at] == b.out[0][bi * c + k]) {
                           d = b.in[1][bi * c + k];
                           routed = true;
                         }
                         b.out[1][at] = d;
                       }
                     }
                 }});
  }
}

// ---- GEMM ----------------------------------------------------------------------------------------------------------

// sum over q < k of op(A)[r, q] op(B)[q, c] in double; op(X) = X or X^T, X row-major with row stride ldx.
double product_at(bool ta, bool tb, const std::vector<float>& a, Index lda, const std::vector<float>& b, Index ldb,
                  Index k, Index r, Index c) {
  double s = 0;
  for (Index q = 0; q < k; ++q)
    s += double(ta ? a[q * lda + r] : a[r * lda + q]) * (tb ? b[c * ldb + q] : b[q * ldb + c]);
  return s;
}

void gemm_cases(std::vector<OpCase>& t) {
  const Index m = 13, n = 7, k = 11;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const float beta : {0.f, 0.3f}) {
        // Row strides two wider than the matrices, so a backend that ignores them fails.
        const Index lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 2, ldc = n + 2;
        const Index a_rows = ta ? k : m, b_rows = tb ? n : k;
        const std::string label = std::string("gemm(") + (ta ? "T" : "N") + (tb ? "T" : "N") +
                                  ", m=13 n=7 k=11, alpha=0.7 beta=" + std::to_string(beta) + ")";
        t.push_back({"gemm", label, {a_rows * lda, b_rows * ldb}, {m * ldc}, -1, 1, false, 1e-5,
                     [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                       be.gemm(ta, tb, m, n, k, 0.7f, i[0], lda, i[1], ldb, beta, o[0], ldc);
                     },
                     [=](OpBuffers& b) {
                       for (Index r = 0; r < m; ++r)
                         for (Index c = 0; c < n; ++c) {
                           const double s = product_at(ta, tb, b.in[0], lda, b.in[1], ldb, k, r, c);
                           float& y = b.out[0][r * ldc + c];
                           y = float(0.7 * s + (beta == 0.f ? 0.0 : double(beta) * y));
                         }
                     }});
      }
}

// Dense layers' products: small (one gemm), split over the CPU's threads (W above elementwise's grain), with a
// thread left no rows of W on three threads, and too many rows for the forward split; every epilogue part.
void dense_product_cases(std::vector<OpCase>& t) {
  struct Size {
    Index rows, in, out;
  };
  const Size sizes[] = {{5, 7, 3}, {9, 300, 129}, {2, 2, 20000}, {700, 300, 129}};
  struct Epilogue {
    const char* name;
    bool bias;
    ActivationKind kind;
    ActivationParams p;
  };
  const Epilogue epilogues[] = {{"none", false, ActivationKind::linear, {}},
                                {"bias", true, ActivationKind::linear, {}},
                                {"bias, relu(max 2, threshold 0.5, slope 0.1)", true, ActivationKind::relu,
                                 {0.1f, 2.f, 0.5f}},
                                {"leaky_relu(0.2)", false, ActivationKind::leaky_relu, {0.2f}},
                                {"bias, sigmoid", true, ActivationKind::sigmoid, {}}};
  for (const Size& z : sizes) {
    const Index rows = z.rows, in = z.in, out = z.out;
    const std::string shape =
        "rows=" + std::to_string(rows) + " in=" + std::to_string(in) + " out=" + std::to_string(out);
    for (const Epilogue& e : epilogues)
      t.push_back({"dense_product", "dense_product(forward, " + shape + ", epilogue " + e.name + ")",
                   {rows * in, in * out, out}, {rows * out}, -1, 1, false, 1e-4,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                     be.dense_product(backend::DenseProduct::forward, rows, in, out, i[0], i[1], o[0],
                                      {e.bias ? i[2] : nullptr, e.kind, e.p});
                   },
                   [=](OpBuffers& b) {
                     for (Index r = 0; r < rows; ++r)
                       for (Index c = 0; c < out; ++c) {
                         const double s = (e.bias ? b.in[2][c] : 0.0) +
                                          product_at(false, false, b.in[0], in, b.in[1], out, in, r, c);
                         b.out[0][r * out + c] = static_cast<float>(activate(e.kind, e.p, static_cast<float>(s)));
                       }
                   }});
    // The gradients as C[m, n] = op(A) op(B) over k: x^T dy, and dy W^T (B's rows, of dy or W, are out long).
    struct Gradient {
      backend::DenseProduct which;
      const char* name;
      Index a_size, b_size, m, n, k, lda;
      bool ta, tb;
    };
    const Gradient gradients[] = {
        {backend::DenseProduct::kernel_grad, "kernel_grad", rows * in, rows * out, in, out, rows, in, true, false},
        {backend::DenseProduct::input_grad, "input_grad", rows * out, in * out, rows, in, out, out, false, true}};
    for (const Gradient& g : gradients)
      t.push_back({"dense_product", std::string("dense_product(") + g.name + ", " + shape + ")", {g.a_size, g.b_size},
                   {g.m * g.n}, -1, 1, false, 1e-4,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                     be.dense_product(g.which, rows, in, out, i[0], i[1], o[0], {});
                   },
                   [=](OpBuffers& b) {
                     for (Index r = 0; r < g.m; ++r)
                       for (Index c = 0; c < g.n; ++c)
                         b.out[0][r * g.n + c] =
                             static_cast<float>(product_at(g.ta, g.tb, b.in[0], g.lda, b.in[1], out, g.k, r, c));
                   }});
  }
}

// ---- convolution ----------------------------------------------------------------------------------------------------

Conv2DParams conv_params(Index in_h, Index in_w, Index in_c, Index out_c, int kernel, int stride, int dilation,
                         int pt, int pb, int pl, int pr, int groups, bool relu) {
  Conv2DParams p;
  p.batch = 2;
  p.in_h = in_h, p.in_w = in_w, p.in_c = in_c, p.out_c = out_c;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  p.groups = groups;
  p.relu = relu;
  p.out_h = (in_h + pt + pb - dilation * (kernel - 1) - 1) / stride + 1;
  p.out_w = (in_w + pl + pr - dilation * (kernel - 1) - 1) / stride + 1;
  return p;
}

// Calls f(x index, w index, y index) for every multiply of the convolution.
template <class F>
void for_each_tap(const Conv2DParams& p, F f) {
  const Index cin_g = p.in_c / p.groups, cout_g = p.out_c / p.groups;
  for (Index b = 0; b < p.batch; ++b)
    for (Index oh = 0; oh < p.out_h; ++oh)
      for (Index ow = 0; ow < p.out_w; ++ow)
        for (Index oc = 0; oc < p.out_c; ++oc)
          for (Index kh = 0; kh < p.kernel_h; ++kh)
            for (Index kw = 0; kw < p.kernel_w; ++kw) {
              const Index ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const Index iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              for (Index ic = 0; ic < cin_g; ++ic) {
                const Index channel = (oc / cout_g) * cin_g + ic;
                f(((b * p.in_h + ih) * p.in_w + iw) * p.in_c + channel, ((kh * p.kernel_w + kw) * cin_g + ic) * p.out_c + oc,
                  ((b * p.out_h + oh) * p.out_w + ow) * p.out_c + oc);
              }
            }
}

std::string conv_label(const char* what, const Conv2DParams& p) {
  return std::string("conv2d ") + what + " [2," + str(p.in_h) + "," + str(p.in_w) + "," + str(p.in_c) + "] k" +
         str(p.kernel_h) + " s" + str(p.stride_h) + " d" + str(p.dilation_h) + " pad(" + str(p.pad_top) + "," +
         str(p.pad_bottom) + "," + str(p.pad_left) + "," + str(p.pad_right) + ") groups " + str(p.groups) +
         " -> [2," + str(p.out_h) + "," + str(p.out_w) + "," + str(p.out_c) + "]" + (p.relu ? " relu" : "");
}

void conv_cases(std::vector<OpCase>& t) {
  // Convolutions may run in TF32 on a GPU (10-bit mantissa), as PyTorch allows by default.
  const double tol = 5e-3;
  const Conv2DParams all[] = {
      conv_params(9, 8, 3, 5, 3, 2, 1, 1, 1, 0, 1, 1, false),   // "same", stride 2: asymmetric padding
      conv_params(9, 8, 3, 5, 3, 2, 1, 1, 1, 0, 1, 1, true),
      conv_params(7, 6, 4, 8, 3, 1, 1, 1, 1, 1, 1, 4, false),   // depthwise, multiplier 2
      conv_params(7, 6, 12, 12, 3, 1, 1, 1, 1, 1, 1, 12, false),  // depthwise "same", by four channels on a GPU
      conv_params(9, 8, 8, 8, 3, 2, 1, 0, 1, 0, 1, 8, true),     // depthwise, stride 2 asymmetric "same", ReLU
      conv_params(10, 9, 6, 4, 3, 1, 2, 0, 0, 0, 0, 2, false),  // dilated, 2 groups, valid
      conv_params(5, 7, 16, 24, 1, 1, 1, 0, 0, 0, 0, 1, true),  // pointwise
  };
  for (const Conv2DParams& p : all) {
    const Index xs = p.batch * p.in_h * p.in_w * p.in_c, ys = p.batch * p.out_h * p.out_w * p.out_c;
    const Index ws = Index(p.kernel_h) * p.kernel_w * (p.in_c / p.groups) * p.out_c;
    t.push_back({"make_conv2d", conv_label("forward", p), {xs, ws, p.out_c}, {ys}, -1, 1, false, tol,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.make_conv2d(p)->forward(i[0], i[1], i[2], o[0]); },
                 [=](OpBuffers& b) {
                   std::vector<double> acc(ys, 0.0);
                   for_each_tap(p, [&](Index x, Index w, Index y) { acc[y] += double(b.in[0][x]) * b.in[1][w]; });
                   for (Index y = 0; y < ys; ++y) {
                     const double v = acc[y] + b.in[2][y % p.out_c];
                     b.out[0][y] = float(p.relu ? std::max(v, 0.0) : v);
                   }
                 }});
    if (p.relu) continue;
    t.push_back({"make_conv2d", conv_label("backward_data", p), {ys, ws}, {xs}, -1, 1, false, tol,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.make_conv2d(p)->backward_data(i[0], i[1], o[0]); },
                 [=](OpBuffers& b) {
                   std::vector<double> acc(xs, 0.0);
                   for_each_tap(p, [&](Index x, Index w, Index y) { acc[x] += double(b.in[0][y]) * b.in[1][w]; });
                   for (Index x = 0; x < xs; ++x) b.out[0][x] = float(acc[x]);
                 }});
    t.push_back({"make_conv2d", conv_label("backward_weights", p), {xs, ys}, {ws, p.out_c}, -1, 1, false, tol,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.make_conv2d(p)->backward_weights(i[0], i[1], o[0], o[1]);
                 },
                 [=](OpBuffers& b) {
                   std::vector<double> acc(ws, 0.0), bias(p.out_c, 0.0);
                   for_each_tap(p, [&](Index x, Index w, Index y) { acc[w] += double(b.in[0][x]) * b.in[1][y]; });
                   for (Index y = 0; y < ys; ++y) bias[y % p.out_c] += b.in[1][y];
                   for (Index w = 0; w < ws; ++w) b.out[0][w] = float(acc[w]);
                   for (Index c = 0; c < p.out_c; ++c) b.out[1][c] = float(bias[c]);
                 }});
  }
}

// ---- pooling -----------------------------------------------------------------------------------------------------------

using backend::backend_testing::for_each_window;

Pool2DParams pool_params(PoolKind kind, Index in_h, Index in_w, int size, int stride, int pt, int pb, int pl, int pr) {
  Pool2DParams p;
  p.kind = kind;
  p.batch = 2, p.in_h = in_h, p.in_w = in_w, p.channels = 3;
  p.pool_h = p.pool_w = size;
  p.stride_h = p.stride_w = stride;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  p.out_h = (in_h + pt + pb - size) / stride + 1;
  p.out_w = (in_w + pl + pr - size) / stride + 1;
  return p;
}

void pool_cases(std::vector<OpCase>& t) {
  for (const PoolKind kind : {PoolKind::max, PoolKind::average})
    for (const Pool2DParams& p : {pool_params(kind, 7, 9, 2, 2, 0, 0, 0, 0), pool_params(kind, 9, 8, 3, 2, 1, 1, 0, 1),
                                  pool_params(kind, 6, 6, 3, 1, 1, 1, 1, 1)}) {
      const bool max = kind == PoolKind::max;
      const Index xs = p.batch * p.in_h * p.in_w * p.channels, ys = p.batch * p.out_h * p.out_w * p.channels;
      const std::string label = std::string("pool2d ") + (max ? "max " : "average ") + str(p.pool_h) + "x" +
                                str(p.pool_w) + " s" + str(p.stride_h) + " pad(" + str(p.pad_top) + "," +
                                str(p.pad_bottom) + "," + str(p.pad_left) + "," + str(p.pad_right) + ") [2," +
                                str(p.in_h) + "," + str(p.in_w) + ",3]";
      const auto forward = [=](const std::vector<float>& x, std::vector<float>& y) {
        for_each_window(p, [&](Index yi, const std::vector<Index>& w) {
          double acc = max ? -INFINITY : 0.0;
          for (Index xi : w) acc = max ? std::max(acc, double(x[xi])) : acc + x[xi];
          y[yi] = float(max ? acc : acc / double(w.size()));
        });
      };
      // forward then backward on one op (backward needs the forward's argmax): out[0] = y, out[1] = dx.
      t.push_back({"make_pool2d", label, {xs, ys}, {ys, xs}, -1, 1, true, 1e-6,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                     auto op = be.make_pool2d(p);
                     op->forward(i[0], o[0], true);
                     op->backward(i[1], o[1]);
                   },
                   [=](OpBuffers& b) {
                     forward(b.in[0], b.out[0]);
                     std::fill(b.out[1].begin(), b.out[1].end(), 0.f);
                     for_each_window(p, [&](Index yi, const std::vector<Index>& w) {
                       if (max) {
                         Index arg = w[0];
                         for (Index xi : w)
                           if (b.in[0][xi] > b.in[0][arg]) arg = xi;
                         b.out[1][arg] += b.in[1][yi];
                       } else {
                         for (Index xi : w) b.out[1][xi] += b.in[1][yi] / float(w.size());
                       }
                     });
                   }});
      t.push_back({"make_pool2d", label + " inference", {xs}, {ys}, -1, 1, true, 1e-6,
                   [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.make_pool2d(p)->forward(i[0], o[0], false); },
                   [=](OpBuffers& b) { forward(b.in[0], b.out[0]); }});
    }
}

// ---- batch normalisation -----------------------------------------------------------------------------------------------

// [37, 5], and [4099, 72]: several tiles of 32 channels, one partly filled, and several chunks of rows in the CUDA
// backend's sums, and the element passes four channels at a time.
void batch_norm_cases(std::vector<OpCase>& t, Index shape_rows, Index shape_channels) {
  BatchNormParams p;
  p.rows = shape_rows, p.channels = shape_channels, p.epsilon = 1e-3f;
  const std::string shape = "[" + std::to_string(shape_rows) + "," + std::to_string(shape_channels) + "]";
  const Index rows = p.rows, ch = p.channels, n = rows * ch;
  const auto stats = [=](const std::vector<float>& x, std::vector<float>& mean, std::vector<float>& var) {
    for (Index c = 0; c < ch; ++c) {
      double m = 0, v = 0;
      for (Index r = 0; r < rows; ++r) m += x[r * ch + c];
      m /= double(rows);
      for (Index r = 0; r < rows; ++r) v += (x[r * ch + c] - m) * (x[r * ch + c] - m);
      mean[c] = float(m);
      var[c] = float(v / double(rows));
    }
  };
  const auto normalize = [=](const std::vector<float>& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                             const std::vector<float>& mean, const std::vector<float>& var, std::vector<float>& y) {
    for (Index r = 0; r < rows; ++r)
      for (Index c = 0; c < ch; ++c)
        y[r * ch + c] = float(gamma[c] * (x[r * ch + c] - double(mean[c])) / std::sqrt(double(var[c]) + p.epsilon) + beta[c]);
  };
  // Inputs in [0.1, 1): the inference case reads input 4 as a variance.
  t.push_back({"make_batch_norm", "batch_norm forward_inference " + shape, {n, ch, ch, ch, ch}, {n}, 0.1f, 1.f, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.make_batch_norm(p)->forward_inference(i[0], i[1], i[2], i[3], i[4], o[0]);
               },
               [=](OpBuffers& b) { normalize(b.in[0], b.in[1], b.in[2], b.in[3], b.in[4], b.out[0]); }});
  // forward_training then backward with its statistics: out = y, mean, variance, dx, dgamma, dbeta.
  t.push_back({"make_batch_norm", "batch_norm forward_training + backward " + shape, {n, ch, ch, n},
               {n, ch, ch, n, ch, ch}, -1, 1, false, 1e-4,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 auto op = be.make_batch_norm(p);
                 op->forward_training(i[0], i[1], i[2], o[0], o[1], o[2]);
                 op->backward(i[0], i[3], i[1], o[1], o[2], o[3], o[4], o[5]);
               },
               [=](OpBuffers& b) {
                 stats(b.in[0], b.out[1], b.out[2]);
                 normalize(b.in[0], b.in[1], b.in[2], b.out[1], b.out[2], b.out[0]);
                 for (Index c = 0; c < ch; ++c) {
                   const double inv = 1.0 / std::sqrt(double(b.out[2][c]) + p.epsilon);
                   double dbeta = 0, dgamma = 0;
                   for (Index r = 0; r < rows; ++r) {
                     const double xhat = (b.in[0][r * ch + c] - double(b.out[1][c])) * inv;
                     dbeta += b.in[3][r * ch + c];
                     dgamma += b.in[3][r * ch + c] * xhat;
                   }
                   for (Index r = 0; r < rows; ++r) {
                     const double xhat = (b.in[0][r * ch + c] - double(b.out[1][c])) * inv;
                     b.out[3][r * ch + c] =
                         float(b.in[1][c] * inv / double(rows) * (double(rows) * b.in[3][r * ch + c] - dbeta - xhat * dgamma));
                   }
                   b.out[4][c] = float(dgamma);
                   b.out[5][c] = float(dbeta);
                 }
               }});
}


// ---- batched GEMM ------------------------------------------------------------------------------------------------

// Three products of m=5 n=4 k=6 with padded row strides and batch strides wider than a matrix; one case shares A
// (stride 0) among the products, one B.
void gemm_batched_cases(std::vector<OpCase>& t, Index batch, Index m, Index n, Index k);

void gemm_batched_cases(std::vector<OpCase>& t) {
  // Small products, and many large ones (over 2^20 multiply-adds each: the CPU backend's per-head attention path).
  for (const auto& [batch, m, n, k] : {std::array<Index, 4>{3, 5, 4, 6}, std::array<Index, 4>{8, 128, 130, 127}})
    gemm_batched_cases(t, batch, m, n, k);
}

void gemm_batched_cases(std::vector<OpCase>& t, Index batch, Index m, Index n, Index k) {
  struct Variant {
    bool ta, tb, share_a, share_b;
  };
  for (const Variant v : {Variant{false, false, false, false}, Variant{true, false, true, false},
                          Variant{false, true, false, true}, Variant{true, true, false, false}}) {
    const Index lda = (v.ta ? m : k) + 1, ldb = (v.tb ? k : n) + 2, ldc = n + 1;
    const Index a_size = (v.ta ? k : m) * lda, b_size = (v.tb ? n : k) * ldb, c_size = m * ldc;
    const Index stride_a = v.share_a ? 0 : a_size + 3, stride_b = v.share_b ? 0 : b_size + 1, stride_c = c_size + 2;
    const std::string label = std::string("gemm_batched(") + (v.ta ? "T" : "N") + (v.tb ? "T" : "N") +
                              ", batch=" + std::to_string(batch) + " m=" + std::to_string(m) + " n=" +
                              std::to_string(n) + " k=" + std::to_string(k) + (v.share_a ? ", A shared" : "") +
                              (v.share_b ? ", B shared" : "") + ", alpha=0.7 beta=0.4)";
    t.push_back({"gemm_batched", label, {stride_a * (batch - 1) + a_size, stride_b * (batch - 1) + b_size},
                 {stride_c * batch}, -1, 1, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.gemm_batched(v.ta, v.tb, batch, m, n, k, 0.7f, i[0], lda, stride_a, i[1], ldb, stride_b, 0.4f,
                                   o[0], ldc, stride_c);
                 },
                 [=](OpBuffers& b) {
                   for (Index e = 0; e < batch; ++e) {
                     const auto a0 = b.in[0].begin() + e * stride_a, b0 = b.in[1].begin() + e * stride_b;
                     const std::vector<float> a(a0, a0 + a_size), bb(b0, b0 + b_size);
                     for (Index r = 0; r < m; ++r)
                       for (Index c = 0; c < n; ++c) {
                         float& y = b.out[0][e * stride_c + r * ldc + c];
                         y = float(0.7 * product_at(v.ta, v.tb, a, lda, bb, ldb, k, r, c) + 0.4 * double(y));
                       }
                   }
                 }});
  }
}

// ---- recurrences ---------------------------------------------------------------------------------------------------

double sigmoid_d(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One LSTM and one GRU step over 5 examples of 7 units, every operand a row with a stride wider than it, so a
// kernel that indexes a row as contiguous fails. The in-place operands are copied to an output first (scale_shift by
// 1) and stepped there.
void recurrent_cases(std::vector<OpCase>& t) {
  const Index b = 5, u = 7;
  const Index gs = 4 * u + 3, cps = u + 1, hs = u + 2, cs = u + 3;  // LSTM row strides
  t.push_back({"lstm_step_forward", "lstm_step_forward(batch=5, units=7, strided rows, bias)",
               {b * gs, 4 * u, b * cps}, {b * gs, b * hs, b * cs}, -2, 2, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.scale_shift(i[0], 1.f, 0.f, o[0], b * gs);
                 be.lstm_step_forward({o[0], gs, i[1], i[2], cps, o[1], hs, o[2], cs, u}, b);
               },
               [=](OpBuffers& x) {
                 x.out[0] = x.in[0];
                 for (Index n = 0; n < b; ++n)
                   for (Index j = 0; j < u; ++j) {
                     double z[4];
                     for (int k = 0; k < 4; ++k) z[k] = double(x.in[0][n * gs + k * u + j]) + x.in[1][k * u + j];
                     const double ig = sigmoid_d(z[0]), fg = sigmoid_d(z[1]), gg = std::tanh(z[2]),
                                  og = sigmoid_d(z[3]);
                     const double c = fg * x.in[2][n * cps + j] + ig * gg;
                     const double act[4] = {ig, fg, gg, og};
                     for (int k = 0; k < 4; ++k) x.out[0][n * gs + k * u + j] = float(act[k]);
                     x.out[2][n * cs + j] = float(c);
                     x.out[1][n * hs + j] = float(og * std::tanh(c));
                   }
               }});
  // Inputs: activated gates (in (0, 1) as sigmoid and tanh leave them), c_prev, c, dh, dc, dh_next, dc_next.
  const Index ds = u + 4, dgs = 4 * u + 1;
  t.push_back({"lstm_step_backward", "lstm_step_backward(batch=5, units=7, strided rows)",
               {b * gs, b * cps, b * cs, b * hs, b * ds, b * u, b * u}, {b * u, b * dgs}, 0.05f, 0.95f, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.scale_shift(i[6], 1.f, 0.f, o[0], b * u);
                 be.lstm_step_backward({i[0], gs, i[1], cps, i[2], cs, i[3], hs, i[4], ds, i[5], o[0], o[1], dgs, u},
                                       b);
               },
               [=](OpBuffers& x) {
                 for (Index n = 0; n < b; ++n)
                   for (Index j = 0; j < u; ++j) {
                     const auto gate = [&](int k) { return double(x.in[0][n * gs + k * u + j]); };
                     const double ig = gate(0), fg = gate(1), gg = gate(2), og = gate(3);
                     const double gh = double(x.in[5][n * u + j]) + x.in[3][n * hs + j];
                     double gc = double(x.in[6][n * u + j]) + x.in[4][n * ds + j];
                     const double tc = std::tanh(double(x.in[2][n * cs + j]));
                     gc += gh * og * (1 - tc * tc);
                     x.out[0][n * u + j] = float(gc * fg);
                     const double d[4] = {gc * gg * ig * (1 - ig), gc * x.in[1][n * cps + j] * fg * (1 - fg),
                                          gc * ig * (1 - gg * gg), gh * tc * og * (1 - og)};
                     for (int k = 0; k < 4; ++k) x.out[1][n * dgs + k * u + j] = float(d[k]);
                   }
               }});
  const Index xs = 3 * u + 2, rs = 3 * u + 5, hps = u + 1;  // GRU row strides
  t.push_back({"gru_step_forward", "gru_step_forward(batch=5, units=7, strided rows, both biases)",
               {b * xs, b * rs, 6 * u, b * hps}, {b * xs, b * rs, b * hs}, -2, 2, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.scale_shift(i[0], 1.f, 0.f, o[0], b * xs);
                 be.scale_shift(i[1], 1.f, 0.f, o[1], b * rs);
                 be.gru_step_forward({o[0], xs, o[1], rs, i[2], i[3], hps, o[2], hs, u}, b);
               },
               [=](OpBuffers& x) {
                 x.out[0] = x.in[0];
                 x.out[1] = x.in[1];
                 for (Index n = 0; n < b; ++n)
                   for (Index j = 0; j < u; ++j) {
                     const auto in_part = [&](int k) { return double(x.in[0][n * xs + k * u + j]) + x.in[2][k * u + j]; };
                     const auto rec_part = [&](int k) {
                       return double(x.in[1][n * rs + k * u + j]) + x.in[2][3 * u + k * u + j];
                     };
                     const double z = sigmoid_d(in_part(0) + rec_part(0)), r = sigmoid_d(in_part(1) + rec_part(1));
                     const double hh = std::tanh(in_part(2) + r * rec_part(2));
                     x.out[0][n * xs + j] = float(z);
                     x.out[0][n * xs + u + j] = float(r);
                     x.out[0][n * xs + 2 * u + j] = float(hh);
                     x.out[1][n * rs + 2 * u + j] = float(rec_part(2));
                     x.out[2][n * hs + j] = float(z * x.in[3][n * hps + j] + (1 - z) * hh);
                   }
               }});
  // Inputs: what forward left in x (z, r, hh) and rec, h_prev, dh, dh_next.
  t.push_back({"gru_step_backward", "gru_step_backward(batch=5, units=7, strided rows)",
               {b * xs, b * rs, b * hps, b * hs, b * u}, {b * u, b * xs, b * rs}, 0.05f, 0.95f, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.scale_shift(i[4], 1.f, 0.f, o[0], b * u);
                 be.gru_step_backward({i[0], xs, i[1], rs, i[2], hps, i[3], hs, o[0], o[1], xs, o[2], rs, u}, b);
               },
               [=](OpBuffers& x) {
                 for (Index n = 0; n < b; ++n)
                   for (Index j = 0; j < u; ++j) {
                     const double z = x.in[0][n * xs + j], r = x.in[0][n * xs + u + j], hh = x.in[0][n * xs + 2 * u + j];
                     const double rh = x.in[1][n * rs + 2 * u + j], hp = x.in[2][n * hps + j];
                     const double g = double(x.in[4][n * u + j]) + x.in[3][n * hs + j];
                     const double gz = g * (hp - hh) * z * (1 - z), ghh = g * (1 - z) * (1 - hh * hh);
                     const double gr = ghh * rh * r * (1 - r);
                     x.out[0][n * u + j] = float(g * z);
                     const double dx[3] = {gz, gr, ghh}, dr[3] = {gz, gr, ghh * r};
                     for (int k = 0; k < 3; ++k) {
                       x.out[1][n * xs + k * u + j] = float(dx[k]);
                       x.out[2][n * rs + k * u + j] = float(dr[k]);
                     }
                   }
               }});
}

// ---- attention -----------------------------------------------------------------------------------------------------

// Attention in double on the host, with every score matrix formed: out, lse and (dout given) the gradients.
struct AttentionReference {
  std::vector<double> out, lse, dq, dk, dv, dlogits;
};
AttentionReference attention_reference(const backend::AttentionParams& p, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v,
                                       const std::vector<float>* bias, const std::vector<float>* mask,
                                       const std::vector<float>* dout) {
  const Index hd = p.head_dim, vd = p.value_dim, H = p.heads;
  AttentionReference r;
  r.out.assign(static_cast<std::size_t>(p.batch * p.tq * H * vd), 0.0);
  r.lse.assign(static_cast<std::size_t>(p.batch * H * p.tq), -INFINITY);
  r.dq.assign(q.size(), 0.0), r.dk.assign(k.size(), 0.0), r.dv.assign(v.size(), 0.0);
  r.dlogits.assign(static_cast<std::size_t>(p.batch * H * p.tq * p.tk), 0.0);
  // Element (b, row, h, d) of a [batch, length, heads, dim] operand.
  const auto at = [&](Index length, Index dim) {
    return [=](Index b, Index row, Index h, Index d) {
      return static_cast<std::size_t>(((b * length + row) * H + h) * dim + d);
    };
  };
  const auto qi = at(p.tq, hd), ki = at(p.tk, hd), vi = at(p.tk, vd), oi = at(p.tq, vd);
  for (Index b = 0; b < p.batch; ++b)
    for (Index h = 0; h < H; ++h)
      for (Index i = 0; i < p.tq; ++i) {
        std::vector<double> w(static_cast<std::size_t>(p.tk), 0.0);
        std::vector<bool> keep(static_cast<std::size_t>(p.tk));
        double m = -INFINITY;
        for (Index j = 0; j < p.tk; ++j) {
          const Index at[4] = {b, h, i, j};
          Index mo = 0, bo = 0;
          for (int a = 0; a < 4; ++a) mo += at[a] * p.mask_strides[a], bo += at[a] * p.bias_strides[a];
          keep[static_cast<std::size_t>(j)] =
              !(p.causal && j > i) && !(mask && (*mask)[static_cast<std::size_t>(mo)] == 0.f);
          double logit = 0;
          for (Index d = 0; d < hd; ++d) logit += double(q[qi(b, i, h, d)]) * k[ki(b, j, h, d)];
          logit = logit * p.scale + (bias ? double((*bias)[static_cast<std::size_t>(bo)]) : 0.0);
          w[static_cast<std::size_t>(j)] = logit;
          if (keep[static_cast<std::size_t>(j)]) m = std::max(m, logit);
        }
        double sum = 0;
        for (Index j = 0; j < p.tk; ++j) {
          double& x = w[static_cast<std::size_t>(j)];
          x = keep[static_cast<std::size_t>(j)] ? std::exp(x - m) : 0.0;
          sum += x;
        }
        if (sum == 0) continue;
        r.lse[static_cast<std::size_t>((b * H + h) * p.tq + i)] = m + std::log(sum);
        for (double& x : w) x /= sum;
        for (Index d = 0; d < vd; ++d)
          for (Index j = 0; j < p.tk; ++j) r.out[oi(b, i, h, d)] += w[static_cast<std::size_t>(j)] * v[vi(b, j, h, d)];
        if (!dout) continue;
        double delta = 0;
        std::vector<double> dp(static_cast<std::size_t>(p.tk), 0.0);
        for (Index j = 0; j < p.tk; ++j)
          for (Index d = 0; d < vd; ++d) {
            const double g = (*dout)[oi(b, i, h, d)];
            dp[static_cast<std::size_t>(j)] += g * v[vi(b, j, h, d)];
            r.dv[vi(b, j, h, d)] += w[static_cast<std::size_t>(j)] * g;
          }
        for (Index j = 0; j < p.tk; ++j) delta += w[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
        for (Index j = 0; j < p.tk; ++j) {
          const double ds = w[static_cast<std::size_t>(j)] * (dp[static_cast<std::size_t>(j)] - delta);
          r.dlogits[static_cast<std::size_t>(((b * H + h) * p.tq + i) * p.tk + j)] = ds;
          for (Index d = 0; d < hd; ++d) {
            r.dq[qi(b, i, h, d)] += p.scale * ds * k[ki(b, j, h, d)];
            r.dk[ki(b, j, h, d)] += p.scale * ds * q[qi(b, i, h, d)];
          }
        }
      }
  return r;
}

void assign(std::vector<float>& to, const std::vector<double>& from) { to.assign(from.begin(), from.end()); }

// Odd sizes across the CUDA kernel's 32-row tiles and the CPU's blocks, a head size off every vector width, a value
// size other than the head's; a bias broadcast over heads and a mask over batch and heads (the mask made on the
// device: relu of an input, so about half the keys are masked); and a causal problem with more queries than keys.
void attention_cases(std::vector<OpCase>& t) {
  backend::AttentionParams masked;
  masked.batch = 2, masked.heads = 2, masked.tq = 37, masked.tk = 41, masked.head_dim = 13, masked.value_dim = 7;
  masked.scale = 0.4f;
  masked.bias_strides[0] = masked.tq * masked.tk, masked.bias_strides[2] = masked.tk, masked.bias_strides[3] = 1;
  masked.mask_strides[2] = masked.tk, masked.mask_strides[3] = 1;
  backend::AttentionParams causal;
  causal.batch = 1, causal.heads = 3, causal.tq = 45, causal.tk = 33, causal.head_dim = 9, causal.value_dim = 9;
  causal.scale = 1.f / 3.f, causal.causal = true;
  for (const backend::AttentionParams& p : {masked, causal}) {
    const bool has_bias = p.bias_strides[3] != 0, has_mask = has_bias;
    const Index nq = p.batch * p.tq * p.heads * p.head_dim, nk = p.batch * p.tk * p.heads * p.head_dim,
                nv = p.batch * p.tk * p.heads * p.value_dim, no = p.batch * p.tq * p.heads * p.value_dim,
                nl = p.batch * p.heads * p.tq, nb = has_bias ? p.batch * p.tq * p.tk : 1,
                nm = has_mask ? p.tq * p.tk : 1, ns = p.batch * p.heads * p.tq * p.tk;
    const std::string label = "(B=" + str(p.batch) + " N=" + str(p.heads) + " Tq=" + str(p.tq) + " Tk=" + str(p.tk) +
                              " H=" + str(p.head_dim) + " Hv=" + str(p.value_dim) +
                              (has_bias ? ", bias [B, 1, Tq, Tk], mask [Tq, Tk])" : ", causal)");
    // Inputs q, k, v, bias, the mask's source; outputs the mask, out, lse (and backward's dq, dk, dv, dlogits).
    const auto with_operands = [=](backend::Backend& be, const Ptrs& i, const Ptrs& o) {
      backend::AttentionParams a = p;
      if (has_bias) a.bias = i[3];
      if (has_mask) {
        be.activation_forward(ActivationKind::relu, {}, i[4], o[0], nm);
        a.mask = o[0];
      }
      return a;
    };
    const auto reference = [=](OpBuffers& x, bool backward) {
      if (has_mask)
        for (Index e = 0; e < nm; ++e) x.out[0][e] = std::max(x.in[4][e], 0.f);
      const AttentionReference r = attention_reference(p, x.in[0], x.in[1], x.in[2], has_bias ? &x.in[3] : nullptr,
                                                       has_mask ? &x.out[0] : nullptr, backward ? &x.in[5] : nullptr);
      assign(x.out[1], r.out);
      assign(x.out[2], r.lse);
      if (!backward) return;
      assign(x.out[3], r.dq), assign(x.out[4], r.dk), assign(x.out[5], r.dv), assign(x.out[6], r.dlogits);
    };
    t.push_back({"attention_forward", "attention_forward" + label, {nq, nk, nv, nb, nm}, {nm, no, nl}, -1, 1, false,
                 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   be.attention_forward(with_operands(be, i, o), i[0], i[1], i[2], o[1], o[2]);
                 },
                 [=](OpBuffers& x) { reference(x, false); }});
    t.push_back({"attention_backward", "attention_backward" + label, {nq, nk, nv, nb, nm, no},
                 {nm, no, nl, nq, nk, nv, ns}, -1, 1, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   const backend::AttentionParams a = with_operands(be, i, o);
                   be.attention_forward(a, i[0], i[1], i[2], o[1], o[2]);
                   be.attention_backward(a, i[0], i[1], i[2], o[1], o[2], i[5], o[3], o[4], o[5], o[6]);
                 },
                 [=](OpBuffers& x) { reference(x, true); }});
  }
}

// ---- selection, strided copies, gathers, scans, extremes, casts ----------------------------------------------------

// `values` as a tensor of `dtype` (float32, int32 or int64) on `device`.
Tensor values_on(Device device, const std::vector<double>& values, DType dtype) {
  Tensor host(Shape{static_cast<Index>(values.size())}, dtype);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::float32) host.data<float>()[i] = static_cast<float>(values[i]);
    if (dtype == DType::int32) host.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    if (dtype == DType::int64) host.data<std::int64_t>()[i] = static_cast<std::int64_t>(values[i]);
  }
  return host.to(device);
}

backend::AnyValues any(const Tensor& t) { return {t.raw_data(), t.dtype()}; }

void selection_cases(std::vector<OpCase>& t) {
  const Index n = 1003;
  // The condition is a mask the case makes itself, greater(x, threshold) (out[1]), so about half of it is 0.
  t.push_back({"select", "select(n=1003) on greater(x, threshold)", {n, n, n, 1}, {n, n}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.broadcast_binary(BinaryOp::greater, i[0], i[3], o[1], make_broadcast(Shape{n}, Shape{n}, Shape{1},
                                                                                          "op table"));
                 be.select(o[1], i[1], i[2], o[0], n);
               },
               [=](OpBuffers& b) {
                 for (Index k = 0; k < n; ++k) {
                   b.out[1][k] = b.in[0][k] > b.in[3][0] ? 1.f : 0.f;
                   b.out[0][k] = b.out[1][k] != 0.f ? b.in[1][k] : b.in[2][k];
                 }
               }});
}

// x [5, 7, 4] and the strided view of it at (4, 1, 3) with steps (-2, 2, -2) over [3, 3, 2]: read into a dense y,
// written from a dense x into y's view (the rest of y kept), and a row read again along a stride-0 axis.
void strided_copy_cases(std::vector<OpCase>& t) {
  const Index big = 5 * 7 * 4, small = 3 * 3 * 2, origin = 4 * 28 + 1 * 4 + 3;
  backend::StridedCopy view;
  view.rank = 3;
  const Index dims[3] = {3, 3, 2}, strided[3] = {-56, 8, -2}, dense[3] = {6, 2, 1};
  for (int k = 0; k < 3; ++k) view.dims[k] = dims[k];
  const auto at = [=](Index e) {  // the big tensor's element of the view's flat index e
    const Index i = e / 6, j = e / 2 % 3, r = e % 2;
    return origin + i * strided[0] + j * strided[1] + r * strided[2];
  };
  backend::StridedCopy gather = view, scatter = view;
  std::copy(strided, strided + 3, gather.x_strides);
  std::copy(dense, dense + 3, gather.y_strides);
  std::copy(dense, dense + 3, scatter.x_strides);
  std::copy(strided, strided + 3, scatter.y_strides);
  t.push_back({"strided_copy", "strided_copy(a [3,3,2] view of [5,7,4] at (4,1,3), steps (-2,2,-2), into dense)",
               {big}, {small}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.strided_copy(i[0] + origin, o[0], gather); },
               [=](OpBuffers& b) {
                 for (Index e = 0; e < small; ++e) b.out[0][e] = b.in[0][at(e)];
               }});
  t.push_back({"strided_copy", "strided_copy(dense [3,3,2] into the view of [5,7,4] at (4,1,3), steps (-2,2,-2))",
               {small}, {big}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.strided_copy(i[0], o[0] + origin, scatter); },
               [=](OpBuffers& b) {
                 for (Index e = 0; e < small; ++e) b.out[0][at(e)] = b.in[0][e];
               }});
  backend::StridedCopy repeat;
  repeat.rank = 2;
  repeat.dims[0] = 4, repeat.dims[1] = 9;
  repeat.x_strides[0] = 0, repeat.x_strides[1] = 1;
  repeat.y_strides[0] = 9, repeat.y_strides[1] = 1;
  t.push_back({"strided_copy", "strided_copy([9] read 4 times along a stride-0 axis)", {9}, {36}, -1, 1, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.strided_copy(i[0], o[0], repeat); },
               [=](OpBuffers& b) {
                 for (Index e = 0; e < 36; ++e) b.out[0][e] = b.in[0][e % 9];
               }});
}

// take and take_backward along the middle axis of x [3, 7, 5]: negative, repeated and truncated float indices, and
// (where the op defines it) one outside the axis; find_invalid_index over valid and invalid lists.
void take_cases(std::vector<OpCase>& t) {
  const Index outer = 3, n = 7, inner = 5;
  struct Indices {
    const char* name;
    DType dtype;
    std::vector<double> values;
  };
  const Indices lists[] = {{"int32 (-1, 0, 3, 3, -7, 6, 2)", DType::int32, {-1, 0, 3, 3, -7, 6, 2}},
                           {"int64 (5, 5, 5, -2, 9 outside)", DType::int64, {5, 5, 5, -2, 9}},
                           {"float32 (2.9, -1.5, 0.2, -7.9)", DType::float32, {2.9, -1.5, 0.2, -7.9}}};
  // The reference's position of an index, -1 outside the axis.
  const auto position = [=](double v) -> Index {
    const Index i = static_cast<Index>(std::trunc(v));
    return i < -n || i >= n ? -1 : (i < 0 ? i + n : i);
  };
  for (const Indices& list : lists) {
    const Index count = static_cast<Index>(list.values.size());
    t.push_back({"take", std::string("take([3,7,5] along axis 1, ") + list.name + ")", {outer * n * inner},
                 {outer * count * inner}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   const Tensor indices = values_on(be.device(), list.values, list.dtype);
                   be.take(any(indices), count, i[0], o[0], outer, n, inner);
                 },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < outer; ++a)
                     for (Index j = 0; j < count; ++j)
                       for (Index r = 0; r < inner; ++r) {
                         const Index p = position(list.values[static_cast<std::size_t>(j)]);
                         b.out[0][(a * count + j) * inner + r] = p < 0 ? 0.f : b.in[0][(a * n + p) * inner + r];
                       }
                 }});
    t.push_back({"take_backward", std::string("take_backward([3,7,5] along axis 1, ") + list.name + ")",
                 {outer * count * inner}, {outer * n * inner}, -1, 1, false, 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   const Tensor indices = values_on(be.device(), list.values, list.dtype);
                   be.take_backward(any(indices), count, i[0], o[0], outer, n, inner);
                 },
                 [=](OpBuffers& b) {
                   std::fill(b.out[0].begin(), b.out[0].end(), 0.f);
                   for (Index a = 0; a < outer; ++a)
                     for (Index j = 0; j < count; ++j)
                       for (Index r = 0; r < inner; ++r) {
                         const Index p = position(list.values[static_cast<std::size_t>(j)]);
                         if (p >= 0) b.out[0][(a * n + p) * inner + r] += b.in[0][(a * count + j) * inner + r];
                       }
                 }});
    // The position comes back through cast (int64 to float32) into the float output.
    t.push_back({"find_invalid_index", std::string("find_invalid_index(axis of 7, ") + list.name + ")", {}, {1}, -1,
                 1, false, 0,
                 [=](Backend& be, const Ptrs&, const Ptrs& o) {
                   const Tensor indices = values_on(be.device(), list.values, list.dtype);
                   const Tensor first(Shape{1}, DType::int64, be.device());
                   be.find_invalid_index(any(indices), count, n, first.data<std::int64_t>());
                   be.cast({first.raw_data(), DType::int64}, 1, DType::float32, o[0]);
                 },
                 [=](OpBuffers& b) {
                   b.out[0][0] = -1.f;
                   for (Index j = count - 1; j >= 0; --j)
                     if (position(list.values[static_cast<std::size_t>(j)]) < 0) b.out[0][0] = float(j);
                 }});
  }
}

void scan_and_extreme_cases(std::vector<OpCase>& t) {
  const Index outer = 5, n = 11, inner = 3, size = outer * n * inner;
  for (const bool reverse : {false, true})
    t.push_back({"cumsum", std::string("cumsum([5,11,3] along axis 1") + (reverse ? ", reverse)" : ")"), {size},
                 {size}, -1, 1, false, 1e-6,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) { be.cumsum(i[0], o[0], outer, n, inner, reverse); },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < outer; ++a)
                     for (Index r = 0; r < inner; ++r) {
                       double s = 0;
                       for (Index k = 0; k < n; ++k) {
                         const Index at = (a * n + (reverse ? n - 1 - k : k)) * inner + r;
                         s += b.in[0][at];
                         b.out[0][at] = float(s);
                       }
                     }
                 }});
  // Inputs on a coarse grid (multiples of 0.25), so columns hold ties; the index comes back through cast.
  for (const bool max : {true, false})
    t.push_back({"reduce_extreme", std::string("reduce_extreme(") + (max ? "max" : "min") +
                                       ", [5,11,3] along axis 1, ties, value and first index)",
                 {size}, {outer * inner, outer * inner}, -1, 1, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   const Tensor grid(Shape{size}, DType::float32, be.device());
                   be.scale_shift(i[0], 4.f, 0.f, grid.data<float>(), size);  // [-4, 4): cast truncates to a grid
                   const Tensor whole(Shape{size}, DType::int32, be.device());
                   be.cast({grid.raw_data(), DType::float32}, size, DType::int32, whole.raw_data());
                   be.cast({whole.raw_data(), DType::int32}, size, DType::float32, grid.raw_data());
                   const Tensor arg(Shape{outer * inner}, DType::int32, be.device());
                   be.reduce_extreme(max, grid.data<float>(), o[0], arg.data<std::int32_t>(), outer, n, inner);
                   be.cast({arg.raw_data(), DType::int32}, outer * inner, DType::float32, o[1]);
                 },
                 [=](OpBuffers& b) {
                   for (Index a = 0; a < outer; ++a)
                     for (Index r = 0; r < inner; ++r) {
                       const auto value = [&](Index k) { return std::trunc(4.f * b.in[0][(a * n + k) * inner + r]); };
                       Index best = 0;
                       for (Index k = 1; k < n; ++k)
                         if (max ? value(k) > value(best) : value(k) < value(best)) best = k;
                       b.out[0][a * inner + r] = value(best);
                       b.out[1][a * inner + r] = float(best);
                     }
                 }});
}

// float32 through each integer type and back (truncation toward zero; uint8 keeps the low 8 bits of the truncated
// value), and int32 through int64 and uint8.
void cast_cases(std::vector<OpCase>& t) {
  const Index n = 1003;
  for (const DType via : {DType::int32, DType::int64, DType::uint8})
    t.push_back({"cast", "cast(n=1003 in [-300, 300), float32 -> " + dtype_name(via) + " -> float32)", {n}, {n}, -300,
                 300, false, 0,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   const Tensor y(Shape{n}, via, be.device());
                   be.cast({i[0], DType::float32}, n, via, y.raw_data());
                   be.cast({y.raw_data(), via}, n, DType::float32, o[0]);
                 },
                 [=](OpBuffers& b) {
                   for (Index k = 0; k < n; ++k) {
                     const double whole = std::trunc(double(b.in[0][k]));
                     const auto low_bits = static_cast<std::uint8_t>(static_cast<int>(whole));
                     b.out[0][k] = float(via == DType::uint8 ? double(low_bits) : whole);
                   }
                 }});
  t.push_back({"cast", "cast(n=1003, float32 -> int32 -> int64 -> uint8 -> float32)", {n}, {n}, -300, 300, false, 0,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 const Tensor a(Shape{n}, DType::int32, be.device()), b(Shape{n}, DType::int64, be.device()),
                     c(Shape{n}, DType::uint8, be.device());
                 be.cast({i[0], DType::float32}, n, DType::int32, a.raw_data());
                 be.cast({a.raw_data(), DType::int32}, n, DType::int64, b.raw_data());
                 be.cast({b.raw_data(), DType::int64}, n, DType::uint8, c.raw_data());
                 be.cast({c.raw_data(), DType::uint8}, n, DType::float32, o[0]);
               },
               [=](OpBuffers& b) {
                 for (Index k = 0; k < n; ++k)
                   b.out[0][k] = float(static_cast<std::uint8_t>(static_cast<int>(std::trunc(double(b.in[0][k])))));
               }});
}

// ---- optimizer updates ------------------------------------------------------------------------------------------

// The tensor list of the optimizer cases, as consecutive slices of one buffer.
const Sizes kOptimizerTensors = {1, 7, 33, 1001};

void optimizer_cases(std::vector<OpCase>& t) {
  using namespace backend;
  Index total = 0;
  for (Index n : kOptimizerTensors) total += n;
  struct Rule {
    const char* label;
    OptimizerUpdate update;
    int slots;
  };
  const Rule rules[] = {
      {"SGD nesterov, weight decay", {SGDStep{0.1f, 0.9f, true}, 0.01f}, 1},
      {"Adam amsgrad", {AdamStep{0.01f, 0.1f, 0.001f, 1e-7f, true}}, 3},
      {"Adamax", {AdamaxStep{0.02f, 0.1f, 0.999f, 0.19f, 1e-7f}}, 2},
      {"Nadam", {NadamStep{0.002f, 0.1f, 0.001f, 1e-7f, 0.8f, 0.6f, 1.5f}}, 2},
      {"RMSprop momentum", {RMSpropStep{0.01f, 0.9f, 0.1f, 0.5f, 1e-7f, false}}, 2},
      {"Adagrad", {AdagradStep{0.01f, 1e-7f}}, 1},
      {"Adadelta", {AdadeltaStep{1.f, 0.95f, 0.05f, 1e-7f}}, 2},
      {"Lion", {LionStep{0.01f, 0.9f, 0.1f, 0.99f, 0.01f}}, 1},
      {"Ftrl, weight decay", {FtrlStep{0.1f, 0.5f, 0.01f, 0.1f, 0.04f}, 0.01f}, 2},
  };
  // Inputs: the gradient, then the starting variable and slots, all in [0, 1) so that every square root is of a
  // positive number; outputs: the variable and slots after two steps.
  for (const Rule& r : rules)
    t.push_back({"apply_update", std::string("apply_update(") + r.label + "; n=1,7,33,1001; 2 steps)",
                 Sizes(static_cast<std::size_t>(r.slots) + 2, total), Sizes(static_cast<std::size_t>(r.slots) + 1, total),
                 0, 1, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   for (std::size_t j = 0; j < o.size(); ++j) be.axpby(1.f, i[j + 1], 0.f, o[j], total);
                   std::vector<UpdateTensors> list;
                   Index offset = 0;
                   for (Index n : kOptimizerTensors) {
                     UpdateTensors u{o[0] + offset, i[0] + offset, {}, n};
                     for (int j = 0; j < r.slots; ++j) u.slots[j] = o[j + 1] + offset;
                     list.push_back(u);
                     offset += n;
                   }
                   for (int step = 0; step < 2; ++step) be.apply_update(r.update, list);
                 },
                 [=](OpBuffers& b) {
                   for (std::size_t j = 0; j < b.out.size(); ++j) b.out[j] = b.in[j + 1];
                   for (int step = 0; step < 2; ++step)
                     for (Index e = 0; e < total; ++e) {
                       std::array<float*, 3> s{};
                       for (int j = 0; j < r.slots; ++j) s[j] = &b.out[j + 1][e];
                       optimizer_reference::update(r.update, b.out[0][e], b.in[0][e], s);
                     }
                 }});
  // The rules that reduce over each tensor, on tensors of rank 1 to 3 (Adafactor factors the last two dimensions).
  // Inputs: the gradient, the starting variable and slots, and the scratch; outputs: the variable and slots.
  struct Tensor3 {
    Index n, rows, cols;
  };
  const Tensor3 shapes[] = {{5, 0, 0}, {21, 3, 7}, {30, 3, 5}, {1001, 7, 143}};
  Index shaped_total = 0;
  for (const Tensor3& t3 : shapes) shaped_total += t3.n;
  const Rule reducing[] = {
      {"Lamb, weight decay", {LambStep{0.02f, 0.2f, 0.05f, 0.2f, 0.05f, 1e-3f}, 0.01f}, 2},
      {"Adafactor, clipping", {AdafactorStep{0.5f, 0.5f, 1e-20f, 1e-2f, 0.1f, 0.05f}}, 3},
  };
  for (const Rule& r : reducing) {
    Index scratch_total = 0;
    for (const Tensor3& t3 : shapes) scratch_total += update_scratch_floats(r.update.step, t3.n, t3.rows, t3.cols);
    Sizes ins(static_cast<std::size_t>(r.slots) + 2, shaped_total);
    ins.push_back(scratch_total);
    t.push_back({"apply_update", std::string("apply_update(") + r.label + "; [5], [3, 7], [2, 3, 5], [7, 143]; 2 steps)",
                 ins, Sizes(static_cast<std::size_t>(r.slots) + 1, shaped_total), 0, 1, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   for (std::size_t j = 0; j < o.size(); ++j) be.axpby(1.f, i[j + 1], 0.f, o[j], shaped_total);
                   std::vector<UpdateTensors> list;
                   Index offset = 0, scratch = 0;
                   for (const Tensor3& t3 : shapes) {
                     UpdateTensors u{o[0] + offset, i[0] + offset, {}, t3.n};
                     for (int j = 0; j < r.slots; ++j) u.slots[j] = o[j + 1] + offset;
                     u.scratch = i.back() + scratch;
                     u.rows = t3.rows;
                     u.cols = t3.cols;
                     list.push_back(u);
                     offset += t3.n;
                     scratch += update_scratch_floats(r.update.step, t3.n, t3.rows, t3.cols);
                   }
                   for (int step = 0; step < 2; ++step) be.apply_update(r.update, list);
                 },
                 [=](OpBuffers& b) {
                   for (std::size_t j = 0; j < b.out.size(); ++j) b.out[j] = b.in[j + 1];
                   for (int step = 0; step < 2; ++step) {
                     Index offset = 0;
                     for (const Tensor3& t3 : shapes) {
                       std::array<float*, 3> s{};
                       for (int j = 0; j < r.slots; ++j) s[j] = &b.out[j + 1][offset];
                       optimizer_reference::update_tensor(r.update, &b.out[0][offset], &b.in[0][offset], s, t3.n,
                                                          t3.rows, t3.cols);
                       offset += t3.n;
                     }
                   }
                 }});
  }
  // Gradient accumulation over two calls, the second applying: inputs the gradients and the starting
  // accumulators, output the accumulators (their mean).
  t.push_back({"accumulate_gradients", "accumulate_gradients(2 steps; n=1,7,33,1001)", {total, total}, {total}, -1, 1,
               false, 1e-6,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 be.axpby(1.f, i[1], 0.f, o[0], total);
                 std::vector<UpdateTensors> list;
                 Index offset = 0;
                 for (Index n : kOptimizerTensors) {
                   UpdateTensors u{nullptr, i[0] + offset, {}, n};
                   u.accumulator = o[0] + offset;
                   list.push_back(u);
                   offset += n;
                 }
                 OptimizerUpdate update{SGDStep{0.1f, 0.f, false}};
                 update.gradient_accumulation_steps = 2;
                 for (const bool apply : {false, true}) {
                   update.apply_step = apply;
                   be.accumulate_gradients(update, list);
                 }
               },
               [=](OpBuffers& b) {
                 for (Index e = 0; e < total; ++e) {
                   float acc = b.in[0][e] + b.in[1][e];
                   b.out[0][e] = (b.in[0][e] + acc) / 2.f;
                 }
               }});
  // Inputs: the gradients and the op's device scratch; output: the clipped gradients.
  const Index count = static_cast<Index>(kOptimizerTensors.size());
  for (const GradientClip c : {GradientClip{ClipKind::norm, 1.0}, GradientClip{ClipKind::global_norm, 2.0},
                               GradientClip{ClipKind::value, 0.3}}) {
    const char* kind = c.kind == ClipKind::norm ? "clipnorm 1" : c.kind == ClipKind::global_norm ? "global_clipnorm 2"
                                                                                                 : "clipvalue 0.3";
    t.push_back({"clip_gradients", std::string("clip_gradients(") + kind + "; n=1,7,33,1001)",
                 {total, clip_scratch_floats(count)}, {total}, -1, 1, false, 1e-5,
                 [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                   std::vector<ClipTensors> list;
                   Index offset = 0;
                   for (Index n : kOptimizerTensors) {
                     list.push_back({i[0] + offset, o[0] + offset, n});
                     offset += n;
                   }
                   be.clip_gradients(c, list, i[1]);
                 },
                 [=](OpBuffers& b) {
                   std::vector<double> squares;
                   double all = 0;
                   Index offset = 0;
                   for (Index n : kOptimizerTensors) {
                     squares.push_back(optimizer_reference::squared_norm(&b.in[0][offset], n));
                     all += squares.back();
                     offset += n;
                   }
                   offset = 0;
                   for (std::size_t k = 0; k < kOptimizerTensors.size(); ++k) {
                     const double scale =
                         optimizer_reference::clip_scale(c.kind, c.limit, c.kind == ClipKind::norm ? squares[k] : all);
                     for (Index e = offset; e < offset + kOptimizerTensors[k]; ++e)
                       b.out[0][e] = c.kind == ClipKind::value
                                         ? std::clamp(b.in[0][e], -0.3f, 0.3f)
                                         : static_cast<float>(scale) * b.in[0][e];
                     offset += kOptimizerTensors[k];
                   }
                 }});
  }
}

// ---- synchronized batch normalization ------------------------------------------------------------------------

// `count` doubles of the backend's device (an int64 tensor's memory), for the ops' sums.
double* device_doubles(Backend& be, Index count, std::vector<Tensor>& keep) {
  keep.emplace_back(Shape{count}, DType::int64, be.device());
  return static_cast<double*>(keep.back().raw_data());
}

// Per channel of [rows, channels]: the mean and biased variance in double.
void reference_moments(const std::vector<float>& x, Index rows, Index channels, std::vector<float>& mean,
                       std::vector<float>& variance) {
  for (Index c = 0; c < channels; ++c) {
    double s = 0, q = 0;
    for (Index r = 0; r < rows; ++r) {
      const double v = x[static_cast<std::size_t>(r * channels + c)];
      s += v;
      q += v * v;
    }
    const double m = s / static_cast<double>(rows);
    mean[static_cast<std::size_t>(c)] = static_cast<float>(m);
    variance[static_cast<std::size_t>(c)] = static_cast<float>(std::max(q / static_cast<double>(rows) - m * m, 0.0));
  }
}

void sync_batch_norm_cases(std::vector<OpCase>& t) {
  const Index rows = 301, channels = 13, first = 120;
  // Two replicas' sums (rows [0, 120) and [120, 301)) added as a strategy adds them, then the statistics.
  t.push_back({"batch_norm_sums", "batch_norm_sums(301x13 as 120 + 181 rows) + add_doubles + statistics",
               {rows * channels}, {channels, channels}, -1, 1, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 std::vector<Tensor> keep;
                 double* a = device_doubles(be, 2 * channels + 1, keep);
                 double* b = device_doubles(be, 2 * channels + 1, keep);
                 be.batch_norm_sums(i[0], first, channels, a);
                 be.batch_norm_sums(i[0] + first * channels, rows - first, channels, b);
                 be.add_doubles(a, b, 2 * channels + 1);
                 be.batch_norm_statistics(b, channels, o[0], o[1]);
               },
               [=](OpBuffers& b) { reference_moments(b.in[0], rows, channels, b.out[0], b.out[1]); }});
  // Values far from zero: the variance is a difference of large sums, which double keeps exact enough.
  const Index big = 4099, c7 = 7;
  t.push_back({"batch_norm_statistics", "batch_norm_sums + batch_norm_statistics(4099x7, values in [2, 3))",
               {big * c7}, {c7, c7}, 2, 3, false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 std::vector<Tensor> keep;
                 double* sums = device_doubles(be, 2 * c7 + 1, keep);
                 be.batch_norm_sums(i[0], big, c7, sums);
                 be.batch_norm_statistics(sums, c7, o[0], o[1]);
               },
               [=](OpBuffers& b) { reference_moments(b.in[0], big, c7, b.out[0], b.out[1]); }});
  const float epsilon = 1e-3f;
  // Inputs x, dy, gamma, mean, variance (all in [0.1, 1): a positive variance).
  const auto grad_reference = [=](OpBuffers& b, std::vector<double>& sum_dy, std::vector<double>& sum_dy_xhat) {
    sum_dy.assign(static_cast<std::size_t>(channels), 0.0);
    sum_dy_xhat.assign(static_cast<std::size_t>(channels), 0.0);
    for (Index r = 0; r < rows; ++r)
      for (Index c = 0; c < channels; ++c) {
        const auto i = static_cast<std::size_t>(r * channels + c), k = static_cast<std::size_t>(c);
        const double inv = 1.0 / std::sqrt(static_cast<double>(b.in[4][k]) + epsilon);
        sum_dy[k] += b.in[1][i];
        sum_dy_xhat[k] += b.in[1][i] * (b.in[0][i] - b.in[3][k]) * inv;
      }
  };
  t.push_back({"batch_norm_grad_sums", "batch_norm_grad_sums(301x13) -> dgamma, dbeta",
               {rows * channels, rows * channels, channels, channels, channels}, {channels, channels}, 0.1f, 1,
               false, 1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 std::vector<Tensor> keep;
                 double* sums = device_doubles(be, 2 * channels, keep);
                 be.batch_norm_grad_sums(i[0], i[1], i[3], i[4], epsilon, rows, channels, sums, o[0], o[1]);
               },
               [=](OpBuffers& b) {
                 std::vector<double> sum_dy, sum_dy_xhat;
                 grad_reference(b, sum_dy, sum_dy_xhat);
                 for (std::size_t k = 0; k < static_cast<std::size_t>(channels); ++k) {
                   b.out[0][k] = static_cast<float>(sum_dy_xhat[k]);
                   b.out[1][k] = static_cast<float>(sum_dy[k]);
                 }
               }});
  t.push_back({"batch_norm_sync_dx", "batch_norm_sync_dx(301x13), one replica's sums and count",
               {rows * channels, rows * channels, channels, channels, channels}, {rows * channels}, 0.1f, 1, false,
               1e-5,
               [=](Backend& be, const Ptrs& i, const Ptrs& o) {
                 std::vector<Tensor> keep;
                 double* moments = device_doubles(be, 2 * channels + 1, keep);
                 double* sums = device_doubles(be, 2 * channels, keep);
                 Tensor sink(Shape{2 * channels}, DType::float32, be.device());
                 be.batch_norm_sums(i[0], rows, channels, moments);
                 be.batch_norm_grad_sums(i[0], i[1], i[3], i[4], epsilon, rows, channels, sums, sink.data<float>(),
                                         sink.data<float>() + channels);
                 be.batch_norm_sync_dx(i[0], i[1], i[2], i[3], i[4], epsilon, sums, moments + 2 * channels, rows,
                                       channels, o[0]);
               },
               [=](OpBuffers& b) {
                 std::vector<double> sum_dy, sum_dy_xhat;
                 grad_reference(b, sum_dy, sum_dy_xhat);
                 const double n = static_cast<double>(rows);
                 for (Index r = 0; r < rows; ++r)
                   for (Index c = 0; c < channels; ++c) {
                     const auto i = static_cast<std::size_t>(r * channels + c), k = static_cast<std::size_t>(c);
                     const double inv = 1.0 / std::sqrt(static_cast<double>(b.in[4][k]) + epsilon);
                     const double xhat = (b.in[0][i] - b.in[3][k]) * inv;
                     b.out[0][i] = static_cast<float>(b.in[2][k] * inv *
                                                      (b.in[1][i] - sum_dy[k] / n - xhat * sum_dy_xhat[k] / n));
                   }
               }});
}

}  // namespace

std::vector<OpCase> op_table() {
  std::vector<OpCase> t;
  elementwise_cases(t);
  activation_cases(t);
  softmax_cases(t);
  lrn_cases(t);
  dropout_cases(t);
  layout_cases(t);
  global_pool_cases(t);
  gemm_cases(t);
  gemm_batched_cases(t);
  recurrent_cases(t);
  attention_cases(t);
  dense_product_cases(t);
  conv_cases(t);
  pool_cases(t);
  batch_norm_cases(t, 37, 5);
  batch_norm_cases(t, 4099, 72);
  sync_batch_norm_cases(t);
  optimizer_cases(t);
  selection_cases(t);
  strided_copy_cases(t);
  take_cases(t);
  scan_and_extreme_cases(t);
  cast_cases(t);
  return t;
}

}  // namespace tower::testing
