// Every differentiable op of tower::ops, in the style of ggml's test-backend-ops: at random shapes that broadcast
// (rank 0 to 5, size-1 axes, empty axes, lower ranks aligned at the end), the gradient a GradientTape takes of
// L = sum(op(inputs) * R) (R fixed and random) against central differences of L, summed in double. A checker that
// cannot fail is no checker: CentralDifferencesCatchAPlantedWrongGradient plants one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "api/core/random.h"
#include "api/ops/ops.h"
#include "api/ops/recorder.h"
#include "api/training/gradient_tape.h"

namespace tower {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

enum class Values {
  any,       // uniform in [-1, 1)
  positive,  // uniform in [0.5, 2): log, sqrt, division
  off_zero,  // |x| in [0.1, 1): abs and relu, away from their kink
  grid,      // multiples of 0.1 for the first operand, shifted by 0.05 for the second: maximum and minimum never tie
             // nor come within a step of one
  distinct   // a shuffle of multiples of 0.05 (no two equal): max and min over an axis never tie
};

struct Case {
  std::string name;
  int arity;
  Fn f;
  Values values = Values::any;
};

std::vector<float> draw(Generator& g, Index n, Values kind, int operand) {
  std::vector<float> v(static_cast<std::size_t>(n));
  if (kind == Values::distinct) {
    for (Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 0.05f * static_cast<float>(i - n / 2);
    for (Index i = n - 1; i > 0; --i)
      std::swap(v[static_cast<std::size_t>(i)],
                v[static_cast<std::size_t>(g.next_u64() % static_cast<std::uint64_t>(i + 1))]);
    return v;
  }
  for (float& x : v) {
    switch (kind) {
      case Values::any: x = g.uniform(-1.f, 1.f); break;
      case Values::positive: x = g.uniform(0.5f, 2.f); break;
      case Values::off_zero: x = g.uniform(0.1f, 1.f) * (g.uniform() < 0.5f ? -1.f : 1.f); break;
      case Values::grid: x = std::floor(g.uniform(-1.f, 1.f) * 10.f) / 10.f + (operand == 1 ? 0.05f : 0.f); break;
      case Values::distinct: break;
    }
  }
  return v;
}

// A random shape of `rank` axes of 1 to 3 (now and then an empty axis, of 0), and an operand shape that broadcasts
// to it: a suffix of it with some axes set to 1.
Shape random_shape(Generator& g, int rank) {
  std::vector<Index> d;
  for (int k = 0; k < rank; ++k) d.push_back(g.uniform() < 0.04f ? 0 : 1 + static_cast<Index>(g.uniform() * 3.f));
  return Shape(d);
}
// Something other than `out` itself where it can be (a lower rank, or an axis of 1 where out's is larger).
Shape operand_of(Generator& g, const Shape& out) {
  const int rank = static_cast<int>(g.uniform() * static_cast<float>(out.rank() + 1));
  std::vector<Index> d(out.dims().end() - rank, out.dims().end());
  for (Index& x : d)
    if (g.uniform() < 0.3f) x = 1;
  if (Shape(d) == out)
    for (Index& x : d)
      if (x > 1) {
        x = 1;
        break;
      }
  return Shape(d);
}

double loss_of(const Fn& f, const std::vector<Tensor>& inputs, const std::vector<float>& r) {
  const std::vector<float> y = f(inputs).to_vector();
  double l = 0;
  for (std::size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * r[i];
  return l;
}

// The number of gradient elements that differ from central differences by more than tol * (1 + |numeric|), over
// `draws` random shapes; failures are reported through gtest only when `report`.
int check(const Case& c, int draws, bool report) {
  Generator g(std::hash<std::string>{}(c.name));
  int bad = 0;
  for (int d = 0; d < draws; ++d) {
    const Shape out = random_shape(g, static_cast<int>(g.uniform() * 6.f));  // rank 0 to 5
    // Two operands: the first stretched, then the second, then both.
    std::vector<Shape> shapes;
    for (int i = 0; i < c.arity; ++i) shapes.push_back(c.arity == 1 || d % 3 == 1 - i ? out : operand_of(g, out));
    std::vector<std::vector<float>> values;
    std::vector<Tensor> inputs;
    for (int i = 0; i < c.arity; ++i) {
      values.push_back(draw(g, shapes[i].numel(), c.values, i));
      inputs.push_back(Tensor::from_vector(values.back(), shapes[i]));
    }
    const Shape y_shape = c.f(inputs).shape();
    std::vector<float> r(static_cast<std::size_t>(y_shape.numel()));
    for (float& x : r) x = g.uniform(-1.f, 1.f);
    const Tensor rt = Tensor::from_vector(r, y_shape);

    GradientTape tape;
    for (const Tensor& x : inputs) tape.watch(x);
    const Tensor loss = ops::sum(ops::multiply(c.f(inputs), rt));
    const std::vector<Tensor> grads = tape.gradient(loss, inputs, UnconnectedGradients::zero);

    const float h = 1e-3f;
    for (int i = 0; i < c.arity; ++i) {
      const std::vector<float> analytic = grads[static_cast<std::size_t>(i)].to_vector();
      for (std::size_t j = 0; j < values[static_cast<std::size_t>(i)].size(); ++j) {
        std::vector<Tensor> plus = inputs, minus = inputs;
        std::vector<float> v = values[static_cast<std::size_t>(i)];
        v[j] += h;
        plus[static_cast<std::size_t>(i)] = Tensor::from_vector(v, shapes[static_cast<std::size_t>(i)]);
        v[j] -= 2 * h;
        minus[static_cast<std::size_t>(i)] = Tensor::from_vector(v, shapes[static_cast<std::size_t>(i)]);
        const double numeric = (loss_of(c.f, plus, r) - loss_of(c.f, minus, r)) / (2.0 * h);
        if (std::fabs(analytic[j] - numeric) > 5e-3 * (1.0 + std::fabs(numeric))) {
          ++bad;
          if (report && bad <= 5)
            ADD_FAILURE() << c.name << ", operand " << i << " of shape " << shapes[static_cast<std::size_t>(i)].to_string()
                          << " (result " << y_shape.to_string() << "), element " << j << ": the tape gives "
                          << analytic[j] << ", central differences " << numeric;
        }
      }
    }
  }
  return bad;
}

Tensor flat(const Tensor& t) { return ops::reshape(t, Shape{t.numel()}); }

// A fixed tensor of `shape`: values in [-0.7, 0.8] from the element index.
Tensor fixed(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i % 7) - 0.7f;
  return Tensor::from_vector(v, shape);
}

// A fixed float32 mask of `shape`: 1 but at every third element.
Tensor mask(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i % 3 == 0 ? 0.f : 1.f;
  return Tensor::from_vector(v, shape);
}

Tensor ints(std::vector<std::int32_t> values, Shape shape) { return Tensor::from_vector(values, std::move(shape)); }

std::vector<Case> cases() {
  using V = std::vector<Tensor>;
  return {
      {"add", 2, [](const V& x) { return ops::add(x[0], x[1]); }},
      {"subtract", 2, [](const V& x) { return ops::subtract(x[0], x[1]); }},
      {"multiply", 2, [](const V& x) { return ops::multiply(x[0], x[1]); }},
      {"divide", 2, [](const V& x) { return ops::divide(x[0], x[1]); }, Values::positive},
      {"maximum", 2, [](const V& x) { return ops::maximum(x[0], x[1]); }, Values::grid},
      {"minimum", 2, [](const V& x) { return ops::minimum(x[0], x[1]); }, Values::grid},
      {"operators", 2, [](const V& x) { return (x[0] * 2.f - x[1]) / 3.f + 1.f - (-x[0]) * x[1]; }},
      {"negative", 1, [](const V& x) { return ops::negative(x[0]); }},
      {"abs", 1, [](const V& x) { return ops::abs(x[0]); }, Values::off_zero},
      {"exp", 1, [](const V& x) { return ops::exp(x[0]); }},
      {"log", 1, [](const V& x) { return ops::log(x[0]); }, Values::positive},
      {"sqrt", 1, [](const V& x) { return ops::sqrt(x[0]); }, Values::positive},
      {"square", 1, [](const V& x) { return ops::square(x[0]); }},
      {"reciprocal", 1, [](const V& x) { return ops::reciprocal(x[0]); }, Values::positive},
      {"tanh", 1, [](const V& x) { return ops::tanh(x[0]); }},
      {"sigmoid", 1, [](const V& x) { return ops::sigmoid(x[0]); }},
      {"relu", 1, [](const V& x) { return ops::relu(x[0]); }, Values::off_zero},
      {"gelu", 1, [](const V& x) { return ops::gelu(x[0]); }},
      {"gelu, the tanh form", 1, [](const V& x) { return ops::gelu(x[0], true); }},
      {"silu", 1, [](const V& x) { return ops::silu(x[0]); }},
      {"softplus", 1, [](const V& x) { return ops::softplus(x[0]); }},
      {"clip", 1, [](const V& x) { return ops::clip(x[0], -0.55f, 0.45f); }, Values::grid},
      {"var and std", 1, [](const V& x) {
         return x[0].numel() > 1 ? ops::var(x[0]) + ops::std(x[0]) : ops::square(x[0]);  // std'(0) is infinite
       }},
      {"softmax over the last axis", 1,
       [](const V& x) { return x[0].shape().rank() ? ops::softmax(x[0]) : ops::exp(x[0]); }},
      {"transpose", 1, [](const V& x) {  // rank 3: an order that is not its own inverse
         const std::vector<int> perm = x[0].shape().rank() == 3 ? std::vector<int>{1, 2, 0} : std::vector<int>{};
         return ops::transpose(ops::exp(x[0]), perm) * ops::transpose(x[0], perm);
       }},
      {"concatenate", 2, [](const V& x) {
         const Tensor a = ops::reshape(x[0], Shape{x[0].numel(), 1}), b = ops::reshape(x[1], Shape{x[1].numel(), 1});
         return ops::concatenate({ops::concatenate({a, ops::square(a)}, 1), ops::tanh(ops::concatenate({b, b}, 1))}, 0);
       }},
      {"sum over every axis", 1, [](const V& x) { return ops::sum(x[0]); }},
      {"sum over the last axis, kept", 1,
       [](const V& x) { return x[0].shape().rank() ? ops::sum(x[0], {-1}, true) : ops::sum(x[0]); }},
      {"mean over the first axis", 1,
       [](const V& x) { return x[0].shape().rank() ? ops::mean(x[0], {0}) : ops::mean(x[0]); }},
      {"broadcast_to", 1, [](const V& x) {
         std::vector<Index> d{2};
         d.insert(d.end(), x[0].shape().begin(), x[0].shape().end());
         return ops::broadcast_to(x[0], Shape(d));
       }},
      {"reshape", 1, [](const V& x) { return ops::reshape(x[0], Shape{x[0].numel()}); }},
      {"matmul", 1, [](const V& x) {  // x [n] as a column against a fixed [3, n] matrix, then with its own row
         const Index n = x[0].numel();
         std::vector<float> m(static_cast<std::size_t>(3 * n));
         for (std::size_t i = 0; i < m.size(); ++i) m[i] = 0.25f * static_cast<float>(i % 7) - 0.7f;
         const Tensor col = ops::reshape(x[0], Shape{n, 1}), row = ops::reshape(x[0], Shape{1, n});
         return ops::matmul(ops::matmul(Tensor::from_vector(m, Shape{3, n}), col), row);
       }},
      {"power", 2, [](const V& x) { return ops::power(x[0], x[1]); }, Values::positive},
      {"log1p", 1, [](const V& x) { return ops::log1p(x[0]); }, Values::positive},
      {"rsqrt", 1, [](const V& x) { return ops::rsqrt(x[0]); }, Values::positive},
      {"erf", 1, [](const V& x) { return ops::erf(x[0]); }},
      {"where, a mask of the first operand's shape", 2,
       [](const V& x) { return ops::where(mask(x[0].shape()), x[0], ops::square(x[1])); }},
      {"where, a mask of the second operand's shape", 2,
       [](const V& x) { return ops::where(mask(x[1].shape()), ops::tanh(x[0]), x[1]); }},
      {"where on a comparison", 2,
       [](const V& x) { return ops::where(ops::greater(x[0], x[1]), x[0] * 2.f, x[1]); }, Values::grid},
      {"matmul, batched, broadcast and with vectors", 2, [](const V& x) {
         const Index n0 = x[0].numel(), n1 = x[1].numel();
         const Tensor v = flat(x[0]);
         // [1, n0, 1] shared by the n1 entries of [n1, 1, 1]; a fixed [2, 1, 3, n0] times the vector v; v times a
         // fixed [n0, 2]; [n1, 1, 1] entry by entry with a fixed [n1, 1, 2], read in place.
         const Tensor shared = ops::matmul(ops::reshape(x[0], Shape{1, n0, 1}), ops::reshape(x[1], Shape{n1, 1, 1}));
         const Tensor column = ops::matmul(fixed(Shape{2, 1, 3, n0}), v);
         const Tensor row = ops::matmul(v, fixed(Shape{n0, 2}));
         const Tensor entries = ops::matmul(ops::reshape(ops::tanh(x[1]), Shape{n1, 1, 1}), fixed(Shape{n1, 1, 2}));
         return ops::concatenate({flat(shared), flat(column), flat(row), flat(entries)}, 0);
       }},
      {"expand_dims, stack and squeeze", 1, [](const V& x) {
         return ops::squeeze(ops::expand_dims(ops::stack({x[0], ops::square(x[0])}, -1), 0), {0});
       }},
      {"split into sections and at indices", 1, [](const V& x) {
         const Tensor v = flat(x[0]);
         const Index n = v.numel();
         const std::vector<Tensor> at = ops::split(v, std::vector<Index>{n / 3, n / 2});
         const std::vector<Tensor> halves = ops::split(ops::stack({x[0], ops::exp(x[0])}), 2);
         return ops::concatenate({ops::tanh(at[0]), ops::square(at[1]), at[2], flat(halves[0] * halves[1])}, 0);
       }},
      {"slice to the end of each axis", 1, [](const V& x) {
         std::vector<Index> start, shape;
         for (Index d : x[0].shape()) {
           start.push_back(d / 2);
           shape.push_back(-1);
         }
         return ops::square(ops::slice(x[0], start, shape));
       }},
      {"strided_slice, negative and positive steps", 1, [](const V& x) {
         std::vector<Index> begin, end, strides;
         for (int k = 0; k < x[0].rank(); ++k) {
           const bool back = k % 2 == 0;
           begin.push_back(back ? -1 : 0);
           end.push_back(back ? -1000 : 1000);
           strides.push_back(back ? -2 : 1 + k % 3);
         }
         return ops::square(ops::strided_slice(x[0], begin, end, strides));
       }},
      {"take, negative and repeated indices", 1, [](const V& x) {
         if (x[0].rank() == 0) return ops::take(x[0], ints({0, 0, -1}, Shape{3}));
         const auto n = static_cast<std::int32_t>(x[0].dim(-1));
         const Tensor indices = n == 0 ? ints({}, Shape{0}) : ints({n - 1, -1, 0, n / 2, -n, 0}, Shape{2, 3});
         return ops::square(ops::take(x[0], indices, -1));
       }},
      {"take, flattened", 1, [](const V& x) {
         const auto n = static_cast<std::int32_t>(x[0].numel());
         return n == 0 ? ops::square(x[0]) : ops::take(x[0], ints({0, n - 1, -n, n / 2, n / 2}, Shape{5}));
       }},
      {"pad", 1, [](const V& x) {
         std::vector<std::pair<Index, Index>> widths;
         for (int k = 0; k < x[0].rank(); ++k) widths.push_back({k % 2, 2 - k % 3});
         return ops::square(ops::pad(x[0], widths, 0.5f));
       }},
      {"tile", 1, [](const V& x) { return ops::tile(ops::tanh(x[0]), {2, 1, 3}) * ops::tile(x[0], {2, 1, 3}); }},
      {"repeat, along the first axis and flattened", 1, [](const V& x) {
         const Tensor along = x[0].rank() ? ops::repeat(x[0], 2, 0) : ops::repeat(x[0], 2);
         return ops::concatenate({flat(ops::square(along)), ops::repeat(x[0], 3)}, 0);
       }},
      {"max over every axis", 1, [](const V& x) { return x[0].numel() ? ops::max(x[0]) : ops::sum(x[0]); },
       Values::distinct},
      {"min over the last axis, kept", 1, [](const V& x) {
         return x[0].rank() && x[0].dim(-1) ? ops::min(x[0], {-1}, true) : ops::square(x[0]);
       }, Values::distinct},
      {"max over the first and last axes", 1, [](const V& x) {
         return x[0].rank() && x[0].numel() ? ops::max(x[0], {0, -1}) : ops::square(x[0]);
       }, Values::distinct},
      {"logsumexp over every axis and the last", 1, [](const V& x) {
         const Tensor last = x[0].rank() ? ops::logsumexp(x[0], {-1}) : x[0];
         return ops::concatenate({flat(ops::logsumexp(x[0] * 3.f)), flat(last)}, 0);
       }},
      {"log_softmax over the last axis", 1,
       [](const V& x) { return x[0].rank() ? ops::log_softmax(x[0]) : ops::exp(x[0]); }},
      {"cumsum along the last axis and flattened", 1, [](const V& x) {
         const Tensor last = x[0].rank() ? ops::cumsum(ops::square(x[0]), -1) : x[0];
         return ops::concatenate({flat(last), ops::cumsum(x[0])}, 0);
       }},
      {"cast to float32", 1, [](const V& x) { return ops::cast(x[0], DType::float32) * x[0]; }},
      {"a composition", 2, [](const V& x) {
         return ops::sigmoid(ops::multiply(ops::tanh(x[0]), x[1])) + ops::mean(ops::square(x[0]));
       }},
  };
}

TEST(OpsGradients, EveryOpMatchesCentralDifferencesAtRandomBroadcastShapes) {
  for (const Case& c : cases()) EXPECT_EQ(check(c, 12, true), 0) << c.name;
}

// The same checker on an op whose recorded backward is wrong (square's, with 3x in place of 2x) reports it.
TEST(OpsGradients, CentralDifferencesCatchAPlantedWrongGradient) {
  const Case wrong{"square with a wrong gradient", 1, [](const std::vector<Tensor>& x) {
                     Tensor y = ops::square(ops::stop_gradient(x[0]));
                     ops::record({"wrong_square", {x[0]}, y, [x0 = x[0]](const Tensor& g) {
                                    return std::vector<Tensor>{ops::multiply(g, x0 * 3.f)};
                                  }});
                     return y;
                   }};
  EXPECT_GT(check(wrong, 3, false), 0);
}

}  // namespace
}  // namespace tower
