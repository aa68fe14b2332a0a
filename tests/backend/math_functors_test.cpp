// The functors of api/backend/math/ (everything but pooling, optimizers, losses): the CPU backend ops that run
// them against naive references written here, on odd sizes; and the code only the GPU runs (the flat index form
// of the row functors, the data-movement functors, the two-pass column sums) in host loops against the CPU
// backend, bit for bit. Output buffers start from different sentinels, so an element one side leaves unwritten
// shows as a difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/math/activations.h"
#include "api/backend/math/batch_norm.h"
#include "api/backend/math/data_movement.h"
#include "api/backend/math/dropout.h"
#include "api/backend/math/elementwise.h"
#include "api/backend/math/global_pool.h"
#include "api/backend/math/lrn.h"
#include "api/backend/math/recurrent.h"
#include "api/backend/math/reductions.h"
#include "api/backend/math/softmax.h"
#include "api/backend/math/sync_batch_norm.h"
#include "api/core/random.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using backend_testing::random_values;

using Floats = std::vector<float>;

constexpr Index kN = 7 * 13 * 5 * 3;  // 1365
// Above cpu::kParallelGrain, so the CPU's loops split over threads.
constexpr Index kLarge = 100003;

Backend& cpu() { return get(Device::cpu()); }

// Small integers: every sum of a few thousand of them is exact in float, whatever the order.
Floats integer_values(Index n, std::uint64_t seed) {
  Generator g(seed);
  Floats v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(static_cast<int>(g.next_u64() % 17) - 8);
  return v;
}

Floats filled(Index n, float value) { return Floats(static_cast<std::size_t>(n), value); }

template <class F>
void run_on_host(Index n, const F& f) {
  for (Index i = 0; i < n; ++i) f(i);
}

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expect_bitwise_equal(const Floats& actual, const Floats& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int shown = 0;
  for (std::size_t i = 0; i < actual.size() && shown < 5; ++i)
    if (bits(actual[i]) != bits(expected[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
      ++shown;
    }
}

void expect_close(const Floats& actual, const std::vector<double>& expected, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int shown = 0;
  for (std::size_t i = 0; i < actual.size() && shown < 5; ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= tolerance * (1.0 + std::fabs(expected[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
      ++shown;
    }
}

// ---- element-wise ----------------------------------------------------------------------------------------------

TEST(MathFunctors, ElementwiseOpsMatchTheirFormulas) {
  for (Index n : {kN, kLarge}) {
    const Floats a = random_values(n, 1), b = random_values(n, 2);
    Floats y = filled(n, NAN);
    std::vector<double> e(static_cast<std::size_t>(n));
    const auto each = [&](auto formula) {
      for (Index i = 0; i < n; ++i) e[i] = formula(static_cast<double>(a[i]), static_cast<double>(b[i]));
    };
    cpu().fill(y.data(), n, 2.5f);
    each([](double, double) { return 2.5; });
    expect_close(y, e, 0.0, "fill");
    cpu().add(a.data(), b.data(), y.data(), n);
    each([](double u, double v) { return u + v; });
    expect_close(y, e, 1e-7, "add");
    cpu().sub(a.data(), b.data(), y.data(), n);
    each([](double u, double v) { return u - v; });
    expect_close(y, e, 1e-7, "sub");
    cpu().mul(a.data(), b.data(), y.data(), n);
    each([](double u, double v) { return u * v; });
    expect_close(y, e, 1e-7, "mul");
    cpu().scale_shift(a.data(), 1.5f, -0.25f, y.data(), n);
    each([](double u, double) { return 1.5 * u - 0.25; });
    expect_close(y, e, 1e-7, "scale_shift");
    y = b;
    cpu().axpby(0.5f, a.data(), -2.f, y.data(), n);
    each([](double u, double v) { return 0.5 * u - 2.0 * v; });
    expect_close(y, e, 1e-7, "axpby");
    // beta == 0 never reads y: NaN there does not survive.
    y = filled(n, NAN);
    cpu().axpby(3.f, a.data(), 0.f, y.data(), n);
    each([](double u, double) { return 3.0 * u; });
    expect_close(y, e, 1e-7, "axpby with beta 0");
  }
}

TEST(MathFunctors, AddBiasAddsTheColumnBiasAndItsFlatFormMatchesTheCpu) {
  const Index rows = 7 * 13, cols = 5 * 3;
  const Floats y0 = random_values(rows * cols, 3), bias = random_values(cols, 4);
  Floats y = y0;
  cpu().add_bias(y.data(), bias.data(), rows, cols);
  std::vector<double> e(y.size());
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) e[r * cols + c] = static_cast<double>(y0[r * cols + c]) + bias[c];
  expect_close(y, e, 1e-7, "add_bias");
  Floats flat = y0;
  run_on_host(rows * cols, math::AddBias{flat.data(), bias.data(), cols});
  expect_bitwise_equal(flat, y, "AddBias by flat index");
}

// ---- activations ------------------------------------------------------------------------------------------------

struct ActivationCase {
  ActivationKind kind;
  ActivationParams params;
  const char* name;
  double (*forward)(double x, const ActivationParams& p);
  double (*derivative)(double x, const ActivationParams& p);
};

double reference_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double phi(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kTanhGeluK = 0.79788456080286535587989211986876;  // sqrt(2 / pi)

const std::vector<ActivationCase>& activation_cases() {
  static const std::vector<ActivationCase> cases = {
      {ActivationKind::linear, {}, "linear", [](double x, const ActivationParams&) { return x; },
       [](double, const ActivationParams&) { return 1.0; }},
      {ActivationKind::relu, {}, "relu", [](double x, const ActivationParams&) { return x > 0 ? x : 0.0; },
       [](double x, const ActivationParams&) { return x > 0 ? 1.0 : 0.0; }},
      {ActivationKind::relu, {.alpha = 0.1f, .max_value = 2.f, .threshold = 0.5f}, "relu(capped, thresholded)",
       [](double x, const ActivationParams& p) {
         return x >= p.threshold ? std::min<double>(x, p.max_value) : p.alpha * (x - p.threshold);
       },
       [](double x, const ActivationParams& p) {
         return x > p.threshold ? (x < p.max_value ? 1.0 : 0.0) : static_cast<double>(p.alpha);
       }},
      {ActivationKind::sigmoid, {}, "sigmoid", [](double x, const ActivationParams&) { return reference_sigmoid(x); },
       [](double x, const ActivationParams&) { return reference_sigmoid(x) * (1.0 - reference_sigmoid(x)); }},
      {ActivationKind::tanh, {}, "tanh", [](double x, const ActivationParams&) { return std::tanh(x); },
       [](double x, const ActivationParams&) { return 1.0 - std::tanh(x) * std::tanh(x); }},
      {ActivationKind::gelu, {}, "gelu", [](double x, const ActivationParams&) { return x * phi(x); },
       [](double x, const ActivationParams&) {
         return phi(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
       }},
      {ActivationKind::gelu_tanh, {}, "gelu_tanh",
       [](double x, const ActivationParams&) {
         return 0.5 * x * (1.0 + std::tanh(kTanhGeluK * (x + 0.044715 * x * x * x)));
       },
       [](double x, const ActivationParams&) {
         const double t = std::tanh(kTanhGeluK * (x + 0.044715 * x * x * x));
         return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kTanhGeluK * (1.0 + 3.0 * 0.044715 * x * x);
       }},
      {ActivationKind::swish, {}, "swish", [](double x, const ActivationParams&) { return x * reference_sigmoid(x); },
       [](double x, const ActivationParams&) {
         const double s = reference_sigmoid(x);
         return s + x * s * (1.0 - s);
       }},
      {ActivationKind::elu, {.alpha = 0.7f}, "elu",
       [](double x, const ActivationParams& p) { return x > 0 ? x : p.alpha * (std::exp(x) - 1.0); },
       [](double x, const ActivationParams& p) { return x > 0 ? 1.0 : p.alpha * std::exp(x); }},
      {ActivationKind::leaky_relu, {.alpha = 0.2f}, "leaky_relu",
       [](double x, const ActivationParams& p) { return x > 0 ? x : p.alpha * x; },
       [](double x, const ActivationParams& p) { return x > 0 ? 1.0 : static_cast<double>(p.alpha); }},
      {ActivationKind::selu, {}, "selu",
       [](double x, const ActivationParams&) { return kSeluScale * (x > 0 ? x : kSeluAlpha * (std::exp(x) - 1.0)); },
       [](double x, const ActivationParams&) { return x > 0 ? kSeluScale : kSeluScale * kSeluAlpha * std::exp(x); }},
      {ActivationKind::softplus, {}, "softplus",
       [](double x, const ActivationParams&) { return std::log1p(std::exp(x)); },
       [](double x, const ActivationParams&) { return reference_sigmoid(x); }},
      {ActivationKind::softsign, {}, "softsign",
       [](double x, const ActivationParams&) { return x / (1.0 + std::fabs(x)); },
       [](double x, const ActivationParams&) { return 1.0 / ((1.0 + std::fabs(x)) * (1.0 + std::fabs(x))); }},
      {ActivationKind::hard_sigmoid, {}, "hard_sigmoid",
       [](double x, const ActivationParams&) { return std::clamp(x / 6.0 + 0.5, 0.0, 1.0); },
       [](double x, const ActivationParams&) { return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0; }},
      {ActivationKind::exponential, {}, "exponential", [](double x, const ActivationParams&) { return std::exp(x); },
       [](double x, const ActivationParams&) { return std::exp(x); }},
  };
  return cases;
}

TEST(MathFunctors, EveryActivationMatchesItsFormulaForwardAndBackward) {
  for (Index n : {kN, kLarge})
    for (const ActivationCase& c : activation_cases()) {
      const std::string what = std::string(c.name) + " n=" + std::to_string(n);
      // Wide enough to reach softplus' shortcut above 20 and every piece of relu and hard_sigmoid.
      Floats x = random_values(n, 5, -25.f, 25.f);
      const Floats small = random_values(n, 6, -4.f, 4.f);
      for (Index i = 0; i < n; i += 2) x[i] = small[i];  // half in the curved range
      if (c.kind == ActivationKind::exponential)
        for (float& v : x) v = std::fmod(v, 8.f);
      const Floats dy = random_values(n, 7);
      Floats y = filled(n, NAN), dx = filled(n, NAN);
      cpu().activation_forward(c.kind, c.params, x.data(), y.data(), n);
      cpu().activation_backward(c.kind, c.params, x.data(), y.data(), dy.data(), dx.data(), n);
      std::vector<double> ey(x.size()), edx(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        ey[i] = c.forward(x[i], c.params);
        edx[i] = c.derivative(x[i], c.params) * dy[i];
      }
      expect_close(y, ey, 2e-6, what + " forward");
      expect_close(dx, edx, 2e-5, what + " backward");
    }
}

// The GPU takes four elements an item where it can (cuda_elementwise.cu): the same formulas, the same bits.
TEST(MathFunctors, ActivationsByFourElementsEqualByOne) {
  const Index n = 1024;
  const Floats x = random_values(n, 5, -8.f, 8.f), dy = random_values(n, 7);
  for (const ActivationCase& c : activation_cases())
    math::visit_activation(c.kind, c.params, [&](auto f) {
      Floats y1 = filled(n, NAN), y4 = filled(n, NAN), dx1 = filled(n, NAN), dx4 = filled(n, NAN);
      run_on_host(n, math::ActivationForward<decltype(f)>{f, x.data(), y1.data()});
      run_on_host(n / 4, math::ActivationForward<decltype(f), 4>{f, x.data(), y4.data()});
      expect_bitwise_equal(y4, y1, std::string(c.name) + " forward");
      run_on_host(n, math::ActivationBackward<decltype(f)>{f, x.data(), y1.data(), dy.data(), dx1.data()});
      run_on_host(n / 4, math::ActivationBackward<decltype(f), 4>{f, x.data(), y1.data(), dy.data(), dx4.data()});
      expect_bitwise_equal(dx4, dx1, std::string(c.name) + " backward");
    });
}

TEST(MathFunctors, LinearActivationInPlaceLeavesTheDataAlone) {
  Floats x = random_values(kN, 8);
  const Floats x0 = x;
  cpu().activation_forward(ActivationKind::linear, {}, x.data(), x.data(), kN);
  cpu().activation_backward(ActivationKind::linear, {}, x0.data(), x0.data(), x.data(), x.data(), kN);
  expect_bitwise_equal(x, x0, "linear in place");
}

// The layers call activations in place (y == x, dx == dy); each element is read before it is written.
TEST(MathFunctors, ActivationsInPlaceMatchOutOfPlace) {
  const ActivationParams p{};
  const Floats x = random_values(kN, 9, -3.f, 3.f), dy = random_values(kN, 10);
  Floats y = filled(kN, NAN), dx = filled(kN, NAN);
  cpu().activation_forward(ActivationKind::swish, p, x.data(), y.data(), kN);
  cpu().activation_backward(ActivationKind::swish, p, x.data(), y.data(), dy.data(), dx.data(), kN);
  Floats inplace = x, grad = dy;
  cpu().activation_forward(ActivationKind::swish, p, inplace.data(), inplace.data(), kN);
  cpu().activation_backward(ActivationKind::swish, p, x.data(), y.data(), grad.data(), grad.data(), kN);
  expect_bitwise_equal(inplace, y, "swish forward in place");
  expect_bitwise_equal(grad, dx, "swish backward in place");
}

// ---- softmax ------------------------------------------------------------------------------------------------------

TEST(MathFunctors, SoftmaxOverAMiddleAndTheLastAxisMatchesItsFormula) {
  struct Dims { Index outer, axis, inner; };
  for (const Dims d : {Dims{7, 13, 15}, Dims{35, 39, 1}, Dims{3, 1, 5}, Dims{1001, 37, 3}, Dims{2, 20011, 1}}) {
    const Index n = d.outer * d.axis * d.inner;
    const std::string what = "softmax [" + std::to_string(d.outer) + ", " + std::to_string(d.axis) + ", " +
                             std::to_string(d.inner) + "]";
    const Floats x = random_values(n, 11, -30.f, 30.f), dy = random_values(n, 12);
    Floats y = filled(n, NAN), dx = filled(n, NAN);
    cpu().softmax_forward(x.data(), y.data(), d.outer, d.axis, d.inner);
    cpu().softmax_backward(y.data(), dy.data(), dx.data(), d.outer, d.axis, d.inner);
    std::vector<double> ey(x.size()), edx(x.size());
    for (Index o = 0; o < d.outer; ++o)
      for (Index j = 0; j < d.inner; ++j) {
        const auto at = [&](Index a) { return (o * d.axis + a) * d.inner + j; };
        double m = -INFINITY, s = 0.0, dot = 0.0;
        for (Index a = 0; a < d.axis; ++a) m = std::max<double>(m, x[at(a)]);
        for (Index a = 0; a < d.axis; ++a) s += std::exp(x[at(a)] - m);
        for (Index a = 0; a < d.axis; ++a) ey[at(a)] = std::exp(x[at(a)] - m) / s;
        for (Index a = 0; a < d.axis; ++a) dot += ey[at(a)] * dy[at(a)];
        for (Index a = 0; a < d.axis; ++a) edx[at(a)] = ey[at(a)] * (dy[at(a)] - dot);
      }
    expect_close(y, ey, 1e-5, what + " forward");
    expect_close(dx, edx, 1e-5, what + " backward");
  }
}

// ---- local response normalization ---------------------------------------------------------------------------------

// The CPU's threaded, vectorised loops give the bits of the functors called once per index, as the GPU's threads
// call them (their formula is checked by the op table and tests/layers/local_response_normalization_test.cpp).
TEST(MathFunctors, LrnLoopsGiveTheFunctorsBitsAtEveryIndex) {
  struct Case {
    Index depth;
    LrnParams p;
  };
  for (const Case& c : {Case{37, {5, 1.f, 1.f, 0.5f}}, Case{64, {4, 1.f, 0.001f / 9, 0.75f}},
                        Case{3, {10, 2.f, 1e-4f, 0.75f}}, Case{11, {0, 0.5f, 2.f, 1.f}}}) {
    const Index positions = kLarge / c.depth + 1, n = positions * c.depth;
    const std::string what = "lrn [" + std::to_string(positions) + ", " + std::to_string(c.depth) +
                             "], depth_radius " + std::to_string(c.p.depth_radius);
    const Floats x = random_values(n, 13, -3.f, 3.f), dy = random_values(n, 14);
    Floats y = filled(n, NAN), dx = filled(n, NAN);
    cpu().lrn_forward(c.p, x.data(), y.data(), positions, c.depth);
    cpu().lrn_backward(c.p, x.data(), y.data(), dy.data(), dx.data(), positions, c.depth);
    Floats host_y = filled(n, 0.f), host_dx = filled(n, 0.f);
    run_on_host(n, math::LrnForward{x.data(), host_y.data(), c.depth, c.p});
    run_on_host(n, math::LrnBackward{x.data(), y.data(), dy.data(), host_dx.data(), c.depth, c.p});
    expect_bitwise_equal(y, host_y, what + " forward");
    expect_bitwise_equal(dx, host_dx, what + " backward");
  }
}

// ---- dropout ------------------------------------------------------------------------------------------------------

// The scheme the masks have always been drawn with, written out again: changing it would change every seeded run.
float reference_mask(std::uint64_t seed, Index i, float rate) {
  const auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const std::uint64_t draw = mix(mix(seed) ^ static_cast<std::uint64_t>(i));
  const double u = static_cast<double>(draw >> 40) / 16777216.0;
  return u >= rate ? 1.f / (1.f - rate) : 0.f;
}

TEST(MathFunctors, DropoutMaskIsTheCounterBasedStreamBitForBit) {
  for (Index n : {kN, kLarge})
    for (const float rate : {0.f, 0.3f, 0.5f, 0.9f}) {
      const std::uint64_t seed = 0x1234567ULL + static_cast<std::uint64_t>(n);
      Floats mask = filled(n, NAN);
      cpu().dropout_mask(mask.data(), n, rate, &seed);
      Floats expected(mask.size());
      Index kept = 0;
      for (Index i = 0; i < n; ++i) {
        expected[i] = reference_mask(seed, i, rate);
        kept += expected[i] != 0.f;
      }
      expect_bitwise_equal(mask, expected, "dropout_mask rate " + std::to_string(rate));
      EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 1.0 - rate, 0.05) << "rate " << rate;
    }
}

// The GPU's functor reads the seed from memory and mixes the salt per element: the same mask bit for bit.
TEST(MathFunctors, DropoutMaskFromMemoryIsTheSameStream) {
  const std::uint64_t seed = 0xfeedULL;
  for (const float rate : {0.1f, 0.5f}) {
    Floats from_memory = filled(kLarge, NAN), by_value = filled(kLarge, NAN);
    run_on_host(kLarge, math::DropoutMaskFromMemory{from_memory.data(), rate, 1.f / (1.f - rate), &seed});
    cpu().dropout_mask(by_value.data(), kLarge, rate, &seed);
    expect_bitwise_equal(from_memory, by_value, "dropout_mask from memory, rate " + std::to_string(rate));
  }
}

// ---- transpose and data movement --------------------------------------------------------------------------------

TEST(MathFunctors, TransposeMovesEveryAxis) {
  const Shape shape{7, 13, 5, 3};
  const std::vector<int> perm{2, 0, 3, 1};
  const Floats x = random_values(shape.numel(), 13);
  Floats y = filled(shape.numel(), NAN);
  cpu().transpose(x.data(), y.data(), shape, perm);
  Floats expected(y.size());
  Index o = 0;
  for (Index c = 0; c < 5; ++c)
    for (Index a = 0; a < 7; ++a)
      for (Index d = 0; d < 3; ++d)
        for (Index b = 0; b < 13; ++b) expected[o++] = x[((a * 13 + b) * 5 + c) * 3 + d];
  expect_bitwise_equal(y, expected, "transpose (2, 0, 3, 1)");
}

TEST(MathFunctors, TransposeRefusesWhatIsNotAPermutation) {
  Floats x(6), y(6);
  for (const std::vector<int>& perm : {std::vector<int>{0}, std::vector<int>{0, 0}, std::vector<int>{1, 2}})
    EXPECT_THROW(cpu().transpose(x.data(), y.data(), Shape{2, 3}, perm), std::invalid_argument);
  EXPECT_THROW(cpu().transpose(x.data(), y.data(), Shape{1, 1, 1, 1, 1, 1, 1, 1, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8}),
               std::invalid_argument);
}

TEST(MathFunctors, CopyStridedFunctorsMatchTheCpuBitForBit) {
  const Index outer = 7 * 13, src_inner = 5, dst_inner = 5 * 3, offset = 4;
  const Floats src = random_values(outer * src_inner, 14), wide = random_values(outer * dst_inner, 15);
  Floats on_cpu = wide, on_host = wide;
  cpu().copy_strided(src.data(), src_inner, on_cpu.data(), dst_inner, offset, outer);
  run_on_host(outer * src_inner, math::CopyStrided{src.data(), src_inner, on_host.data(), dst_inner, offset});
  expect_bitwise_equal(on_host, on_cpu, "CopyStrided");

  Floats back_cpu = filled(outer * src_inner, 1234.5f), back_host = filled(outer * src_inner, -777.f);
  cpu().copy_strided_back(wide.data(), dst_inner, offset, back_cpu.data(), src_inner, outer);
  run_on_host(outer * src_inner, math::CopyStridedBack{wide.data(), dst_inner, offset, back_host.data(), src_inner});
  expect_bitwise_equal(back_host, back_cpu, "CopyStridedBack");
}

TEST(MathFunctors, Pad2DFunctorsMatchTheCpuBitForBitWhenPaddingAndCropping) {
  struct Case { Index out_h, out_w, top, left; };
  const Index n = 3, h = 7, w = 5;
  // Padding on every side, cropping on every side, and padding one axis while cropping the other; by one channel,
  // and by four where the channels allow.
  for (const Index c : {Index{3}, Index{8}})
    for (const Case k : {Case{10, 8, 2, 1}, Case{4, 2, -2, -1}, Case{9, 3, 1, -1}}) {
      const std::string what = "pad2d of " + std::to_string(c) + " channels to " + std::to_string(k.out_h) + "x" +
                               std::to_string(k.out_w) + " at (" + std::to_string(k.top) + ", " +
                               std::to_string(k.left) + ")";
      const math::Pad2DShape s{h, w, c, k.out_h, k.out_w, k.top, k.left};
      const Index x_size = n * h * w * c, y_size = n * k.out_h * k.out_w * c;
      const Floats x = random_values(x_size, 16), dy = random_values(y_size, 17);
      Floats y_cpu = filled(y_size, 1234.5f), y_host = filled(y_size, -777.f);
      cpu().pad2d(x.data(), y_cpu.data(), n, h, w, c, k.out_h, k.out_w, k.top, k.left);
      run_on_host(y_size, math::Pad2D<1>{x.data(), y_host.data(), s});
      expect_bitwise_equal(y_host, y_cpu, what);

      Floats dx_cpu = filled(x_size, 1234.5f), dx_host = filled(x_size, -777.f);
      cpu().pad2d_backward(dy.data(), dx_cpu.data(), n, h, w, c, k.out_h, k.out_w, k.top, k.left);
      run_on_host(x_size, math::Pad2DBackward<1>{dy.data(), dx_host.data(), s});
      expect_bitwise_equal(dx_host, dx_cpu, what + " backward");
      if (c % 4 != 0) continue;
      Floats y4 = filled(y_size, -777.f), dx4 = filled(x_size, -777.f);
      run_on_host(y_size / 4, math::Pad2D<4>{x.data(), y4.data(), s});
      expect_bitwise_equal(y4, y_cpu, what + " by four channels");
      run_on_host(x_size / 4, math::Pad2DBackward<4>{dy.data(), dx4.data(), s});
      expect_bitwise_equal(dx4, dx_cpu, what + " backward by four channels");
    }
}

TEST(MathFunctors, Upsample2DFunctorsMatchTheCpuBitForBit) {
  const Index n = 3, h = 7, w = 5, c = 13;
  const int fh = 3, fw = 2;
  const Index x_size = n * h * w * c, y_size = x_size * fh * fw;
  const Floats x = random_values(x_size, 18), dy = random_values(y_size, 19);
  Floats y_cpu = filled(y_size, 1234.5f), y_host = filled(y_size, -777.f);
  cpu().upsample2d(x.data(), y_cpu.data(), n, h, w, c, fh, fw);
  run_on_host(y_size, math::Upsample2D{x.data(), y_host.data(), h, w, c, fh, fw});
  expect_bitwise_equal(y_host, y_cpu, "Upsample2D");

  Floats dx_cpu = filled(x_size, 1234.5f), dx_host = filled(x_size, -777.f);
  cpu().upsample2d_backward(dy.data(), dx_cpu.data(), n, h, w, c, fh, fw);
  run_on_host(x_size, math::Upsample2DBackward{dy.data(), dx_host.data(), h, w, c, fh, fw});
  expect_bitwise_equal(dx_host, dx_cpu, "Upsample2DBackward");
}

// ---- global pooling ---------------------------------------------------------------------------------------------

TEST(MathFunctors, GlobalPoolingMatchesItsFormulaAndTheFlatFormsMatchTheCpu) {
  const Index n = 7, positions = 13 * 5, c = 3 * 11;
  // Values on a coarse grid, so many (n, c) columns hold their maximum more than once: the gradient must go to
  // the first.
  Floats x = integer_values(n * positions * c, 20);
  const Floats dy = random_values(n * c, 21);
  for (PoolKind kind : {PoolKind::average, PoolKind::max}) {
    const std::string what = kind == PoolKind::average ? "average" : "max";
    Floats y = filled(n * c, NAN), dx = filled(n * positions * c, NAN);
    cpu().global_pool(kind, x.data(), y.data(), n, positions, c);
    cpu().global_pool_backward(kind, x.data(), y.data(), dy.data(), dx.data(), n, positions, c);
    std::vector<double> ey(y.size()), edx(dx.size(), 0.0);
    for (Index b = 0; b < n; ++b)
      for (Index k = 0; k < c; ++k) {
        const auto at = [&](Index p) { return (b * positions + p) * c + k; };
        double s = 0.0, m = -INFINITY;
        Index first = 0;
        for (Index p = 0; p < positions; ++p) {
          s += x[at(p)];
          if (x[at(p)] > m) m = x[at(p)], first = p;
        }
        ey[b * c + k] = kind == PoolKind::average ? s / static_cast<double>(positions) : m;
        if (kind == PoolKind::average)
          for (Index p = 0; p < positions; ++p) edx[at(p)] = dy[b * c + k] / static_cast<double>(positions);
        else
          edx[at(first)] = dy[b * c + k];
      }
    expect_close(y, ey, 1e-6, "global " + what + " pool");
    expect_close(dx, edx, 1e-6, "global " + what + " pool backward");

    const float inv = 1.f / static_cast<float>(positions);
    Floats y_host = filled(n * c, -777.f), dx_host = filled(n * positions * c, -777.f);
    if (kind == PoolKind::average) {
      run_on_host(n * c, math::GlobalPool<math::AverageOfPositions>{{inv}, x.data(), y_host.data(), positions, c});
      run_on_host(n * positions * c, math::GlobalAveragePoolBackward{dy.data(), dx_host.data(), positions, c, inv});
    } else {
      run_on_host(n * c, math::GlobalPool<math::MaxOfPositions>{{}, x.data(), y_host.data(), positions, c});
      run_on_host(n * c, math::GlobalMaxPoolBackward{x.data(), y.data(), dy.data(), dx_host.data(), positions, c});
    }
    expect_bitwise_equal(y_host, y, "global " + what + " pool by flat index");
    expect_bitwise_equal(dx_host, dx, "global " + what + " pool backward by flat index");
  }
}

// ---- reductions -------------------------------------------------------------------------------------------------

// The GPU's bias_grad: two passes of the functors, as cuda_reduce.cu runs them.
Floats two_pass_column_sums(const Floats& dy, Index rows, Index cols) {
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  Floats partial = filled(blocks.blocks * cols, NAN), db = filled(cols, NAN);
  run_on_host(blocks.blocks * cols,
              math::ColumnPartialSums{dy.data(), partial.data(), rows, cols, blocks.rows_per_block});
  run_on_host(cols, math::ColumnSumsOfPartials{partial.data(), db.data(), blocks.blocks, cols});
  return db;
}

TEST(MathFunctors, BiasGradIsTheColumnSums) {
  const Index rows = 7 * 13 * 5, cols = 3 * 11;
  const Floats dy = random_values(rows * cols, 22);
  Floats db = filled(cols, NAN);
  cpu().bias_grad(dy.data(), db.data(), rows, cols);
  std::vector<double> e(static_cast<std::size_t>(cols), 0.0);
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) e[c] += dy[r * cols + c];
  expect_close(db, e, 1e-5, "bias_grad");
  expect_close(two_pass_column_sums(dy, rows, cols), e, 1e-5, "two-pass column sums");
}

TEST(MathFunctors, TwoPassColumnSumsMatchTheCpuBitForBitOnExactData) {
  struct Dims { Index rows, cols; };
  // A partial last block of rows, a single block, no rows, and BatchNormalization's tall and narrow case.
  for (const Dims d : {Dims{7 * 13 * 5 * 3, 17}, Dims{5, 3}, Dims{0, 4}, Dims{200003, 16}}) {
    const std::string what = "[" + std::to_string(d.rows) + ", " + std::to_string(d.cols) + "]";
    const math::ColumnBlocks blocks = math::column_blocks(d.rows);
    EXPECT_GE(blocks.blocks * blocks.rows_per_block, d.rows) << what;
    EXPECT_LT((blocks.blocks - 1) * blocks.rows_per_block, std::max<Index>(d.rows, 1)) << what;
    const Floats dy = integer_values(d.rows * d.cols, 23);
    Floats db = filled(d.cols, NAN);
    cpu::column_sums(dy.data(), db.data(), d.rows, d.cols);
    expect_bitwise_equal(two_pass_column_sums(dy, d.rows, d.cols), db, "two-pass column sums " + what);
  }
}

TEST(MathFunctors, SumAccumulatesInDoubleAndRoundsOnce) {
  for (Index n : {kN, kLarge}) {
    // Many small terms after a large one: a float accumulator would lose them.
    Floats x = random_values(n, 24, 0.f, 1e-3f);
    x[0] = 1e4f;
    double e = 0.0;
    for (float v : x) e += v;
    float y = NAN;
    cpu().sum(x.data(), &y, n);
    EXPECT_NEAR(y, e, 1e-6 * e) << "n=" << n;
    float stored = NAN;
    run_on_host(1, math::RoundToFloat{&e, &stored});
    EXPECT_EQ(stored, static_cast<float>(e));
  }
}

// The CUDA backend's batch normalization (cuda_batch_norm.cu) is these functors after its per-channel sums: here
// they run on the CPU, after the CPU backend's sums, against the CPU backend's BatchNormOp (oneDNN), training
// forward, inference forward and backward, at MobileNetV2's channel count 96 and an odd one, with a mean far from
// 0 (where a one-pass variance in float would lose it).
TEST(MathFunctors, BatchNormFactorsMatchTheCpuBatchNormOp) {
  const auto expect_near = [](const Floats& actual, const Floats& expected, double tolerance, const std::string& what) {
    expect_close(actual, std::vector<double>(expected.begin(), expected.end()), tolerance, what);
  };
  for (const Index channels : {Index{7}, Index{96}}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    const Index rows = 301, n = rows * channels;
    const float epsilon = 1e-3f;
    const Floats x = random_values(n, 1, 4.f, 6.f), dy = random_values(n, 2), gamma = random_values(channels, 3),
                 beta = random_values(channels, 4), some_variance = random_values(channels, 5, 0.1f, 2.f);
    Backend& be = cpu();
    auto op = be.make_batch_norm({.rows = rows, .channels = channels, .epsilon = epsilon});
    Floats y(n), mean(channels), variance(channels), dx(n), dgamma(channels), dbeta(channels), y_inference(n);
    op->forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), variance.data());
    op->backward(x.data(), dy.data(), gamma.data(), mean.data(), variance.data(), dx.data(), dgamma.data(),
                 dbeta.data());
    op->forward_inference(x.data(), gamma.data(), beta.data(), beta.data(), some_variance.data(), y_inference.data());

    std::vector<double> sums(static_cast<std::size_t>(2 * channels + 1));
    be.batch_norm_sums(x.data(), rows, channels, sums.data());
    Floats m(channels), v(channels), scale(channels), out(n);
    run_on_host(channels, math::MomentsFromSums{sums.data(), m.data(), v.data(), channels});
    expect_near(m, mean, 1e-6, "mean");
    expect_near(v, variance, 1e-5, "variance");
    run_on_host(channels, math::BatchNormScale{gamma.data(), v.data(), epsilon, scale.data()});
    run_on_host(n, math::BatchNormApply<1>{x.data(), m.data(), scale.data(), beta.data(), out.data(), channels});
    expect_near(out, y, 2e-5, "y");
    if (channels % 4 == 0) {
      Floats by_four(n);
      run_on_host(n / 4, math::BatchNormApply<4>{x.data(), m.data(), scale.data(), beta.data(), by_four.data(), channels});
      expect_bitwise_equal(by_four, out, "y by four channels");
    }

    // Inference with beta as the mean and other positive values as the variance.
    run_on_host(channels, math::BatchNormScale{gamma.data(), some_variance.data(), epsilon, scale.data()});
    run_on_host(n, math::BatchNormApply<1>{x.data(), beta.data(), scale.data(), beta.data(), out.data(), channels});
    expect_near(out, y_inference, 2e-5, "inference y");

    std::vector<double> grad_sums(static_cast<std::size_t>(2 * channels));
    Floats dg(channels), db(channels), factors(3 * channels), d(n);
    be.batch_norm_grad_sums(x.data(), dy.data(), m.data(), v.data(), epsilon, rows, channels, grad_sums.data(),
                             dg.data(), db.data());
    run_on_host(channels, math::BatchNormGradFactors{grad_sums.data(), double(rows), gamma.data(), v.data(), epsilon,
                                                     dg.data(), db.data(), factors.data(), channels});
    expect_near(dg, dgamma, 1e-4, "dgamma");
    expect_near(db, dbeta, 1e-4, "dbeta");
    run_on_host(n, math::BatchNormDx<1>{x.data(), dy.data(), m.data(), factors.data(), d.data(), channels});
    expect_near(d, dx, 1e-4, "dx");
    if (channels % 4 == 0) {
      Floats by_four(n);
      run_on_host(n / 4, math::BatchNormDx<4>{x.data(), dy.data(), m.data(), factors.data(), by_four.data(), channels});
      expect_bitwise_equal(by_four, d, "dx by four channels");
    }
  }
}

}  // namespace
}  // namespace tower::backend

namespace tower {
namespace {

// The recurrences' exp, sigmoid and tanh (math/recurrent.h, written without library calls so they vectorise) against
// the C library's in double, over the whole range a float argument takes.
TEST(MathFunctors, TheRecurrencesExpSigmoidAndTanhMatchTheLibrarys) {
  double worst_exp = 0, worst_tanh = 0, worst_sigmoid = 0;
  for (int k = -870000; k <= 880000; ++k) {
    const float x = static_cast<float>(k) * 1e-4f;
    const double e = std::exp(static_cast<double>(x));
    worst_exp = std::max(worst_exp, std::fabs(backend::math::recurrent_exp(x) - e) / e);
    worst_tanh = std::max(worst_tanh, std::fabs(backend::math::recurrent_tanh(x) - std::tanh(static_cast<double>(x))));
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(backend::math::recurrent_sigmoid(x) - 1 / (1 + std::exp(-double(x)))));
  }
  EXPECT_LT(worst_exp, 3e-7);  // 2.5 float ulps
  EXPECT_LT(worst_tanh, 2e-7);
  EXPECT_LT(worst_sigmoid, 2e-7);
  EXPECT_EQ(backend::math::recurrent_tanh(0.f), 0.f);
  EXPECT_EQ(backend::math::recurrent_tanh(-30.f), -1.f);
  EXPECT_LT(backend::math::recurrent_sigmoid(-200.f), 1e-37f);
}

}  // namespace
}  // namespace tower
