// The CPU backend's losses-and-metrics ops (backend.h, "losses and metrics"; the functors of math/losses.h the GPU
// runs too) against naive scalar references written from Keras' definitions, on odd sizes: the crossentropies',
// MSE's, MAE's, Huber's and KLD's forward, backward and fused softmax gradient (the other losses are checked against
// Keras and central differences in tests/losses), the invalid-label rules, the training loop's weights, scale and
// sums, the regularizer penalty and gradient, and every metric accumulation (mean metrics, threshold counts, AUC).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"

namespace tower::backend {
namespace {

Backend& cpu() { return get(Device::cpu()); }

AnyValues values(const std::vector<float>& v) { return {v.data(), DType::float32}; }
AnyValues values(const std::vector<std::int32_t>& v) { return {v.data(), DType::int32}; }
AnyValues values(const std::vector<std::int64_t>& v) { return {v.data(), DType::int64}; }
AnyValues values(const std::vector<std::uint8_t>& v) { return {v.data(), DType::uint8}; }

std::vector<float> uniform(Index n, float lo, float hi, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = g.uniform(lo, hi);
  return v;
}

std::vector<std::int32_t> classes(Index n, int num_classes, std::uint64_t seed) {
  Generator g(seed);
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (auto& c : v) c = static_cast<std::int32_t>(g.next_u64() % static_cast<std::uint64_t>(num_classes));
  return v;
}

std::vector<float> one_hot(const std::vector<std::int32_t>& c, int num_classes) {
  std::vector<float> v(c.size() * static_cast<std::size_t>(num_classes), 0.f);
  for (std::size_t r = 0; r < c.size(); ++r) v[r * num_classes + c[r]] = 1.f;
  return v;
}

// Rows of positive values summing to 1.
std::vector<float> distributions(Index rows, Index cols, std::uint64_t seed) {
  std::vector<float> v = uniform(rows * cols, 0.05f, 1.f, seed);
  for (Index r = 0; r < rows; ++r) {
    double s = 0;
    for (Index j = 0; j < cols; ++j) s += v[r * cols + j];
    for (Index j = 0; j < cols; ++j) v[r * cols + j] = static_cast<float>(v[r * cols + j] / s);
  }
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what,
                  double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what,
                  double rtol = 1e-12, double atol = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
}

constexpr double kEps = 1e-7f, kOneMinusEps = 1.0f - 1e-7f;
constexpr double kNoIgnoredClass = std::numeric_limits<double>::quiet_NaN();
double clip(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }

// ---- losses ------------------------------------------------------------------------------------------------

// A per-element loss: value(t, p) and its derivative, averaged (or summed) over the last axis.
struct ElementwiseCase {
  std::string name;
  LossParams params;
  bool sums = false;
  double (*value)(double t, double p, const LossParams&);
  double (*derivative)(double t, double p, const LossParams&);
  float lo, hi;  // the range of predictions
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<ElementwiseCase> elementwise_cases() {
  LossParams mse{.kind = LossKind::mean_squared_error};
  LossParams mae{.kind = LossKind::mean_absolute_error};
  LossParams huber{.kind = LossKind::huber, .delta = 0.3f};
  LossParams kld{.kind = LossKind::kl_divergence};
  LossParams bce{.kind = LossKind::binary_crossentropy, .label_smoothing = 0.2f};
  LossParams bce_logits{.kind = LossKind::binary_crossentropy, .from_logits = true, .label_smoothing = 0.1f};
  return {
      {"mse", mse, false, [](double t, double p, const LossParams&) { return (p - t) * (p - t); },
       [](double t, double p, const LossParams&) { return 2 * (p - t); }, -2.f, 2.f},
      {"mae", mae, false, [](double t, double p, const LossParams&) { return std::abs(p - t); },
       [](double t, double p, const LossParams&) { return p > t ? 1.0 : p < t ? -1.0 : 0.0; }, -2.f, 2.f},
      {"huber", huber, false,
       [](double t, double p, const LossParams& lp) {
         const double e = std::abs(p - t);
         return e <= lp.delta ? e * e / 2 : lp.delta * (e - lp.delta / 2);
       },
       [](double t, double p, const LossParams& lp) { return std::clamp(p - t, -lp.delta, lp.delta); }, -2.f, 2.f},
      {"kld", kld, true,
       [](double t, double p, const LossParams&) {
         const double tc = clip(t, kEps, 1);
         return tc * (std::log(tc) - std::log(clip(p, kEps, 1)));
       },
       [](double t, double p, const LossParams&) { return p < kEps || p > 1 ? 0.0 : -clip(t, kEps, 1) / p; }, -0.1f,
       1.1f},
      {"bce", bce, false,
       [](double t, double p, const LossParams& lp) {
         const double s = t * (1 - lp.label_smoothing) + lp.label_smoothing / 2, c = clip(p, kEps, kOneMinusEps);
         return -(s * std::log(c) + (1 - s) * std::log(1 - c));
       },
       [](double t, double p, const LossParams& lp) {
         const double s = t * (1 - lp.label_smoothing) + lp.label_smoothing / 2;
         return p < kEps || p > kOneMinusEps ? 0.0 : (p - s) / (p * (1 - p));
       },
       -0.1f, 1.1f},
      {"bce_logits", bce_logits, false,
       [](double t, double x, const LossParams& lp) {
         const double s = t * (1 - lp.label_smoothing) + lp.label_smoothing / 2;
         return -(s * std::log(sigmoid(x)) + (1 - s) * std::log(1 - sigmoid(x)));
       },
       [](double t, double x, const LossParams& lp) {
         return sigmoid(x) - (t * (1 - lp.label_smoothing) + lp.label_smoothing / 2);
       },
       -4.f, 4.f},
  };
}

TEST(LossFunctors, ElementwiseLossesMatchScalarReferences) {
  const Index rows = 7, cols = 5;
  for (const ElementwiseCase& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<float> t = uniform(rows * cols, 0.f, 1.f, 1), p = uniform(rows * cols, c.lo, c.hi, 2);
    const std::vector<float> scale = uniform(rows, 0.1f, 2.f, 3);
    std::vector<float> per_example(rows), grad(rows * cols);
    cpu().loss_forward(c.params, values(t), p.data(), per_example.data(), rows, cols);
    cpu().loss_backward(c.params, values(t), p.data(), scale.data(), grad.data(), rows, cols);
    std::vector<double> want_l(rows), want_g(rows * cols);
    const double divisor = c.sums ? 1.0 : static_cast<double>(cols);
    for (Index r = 0; r < rows; ++r)
      for (Index j = 0; j < cols; ++j) {
        const Index i = r * cols + j;
        want_l[r] += c.value(t[i], p[i], c.params) / divisor;
        want_g[i] = scale[r] * c.derivative(t[i], p[i], c.params) / divisor;
      }
    expect_close(per_example, want_l, "per_example");
    expect_close(grad, want_g, "grad");
  }
}

TEST(LossFunctors, ElementwiseLossesReadIntegerLabelsAndOneColumn) {
  // [13] predictions, one value per example, against int32 labels: the same as float labels.
  const Index rows = 13;
  const std::vector<std::int32_t> ti = classes(rows, 2, 4);
  const std::vector<float> tf(ti.begin(), ti.end()), p = uniform(rows, 0.f, 1.f, 5), scale(rows, 0.5f);
  for (const ElementwiseCase& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<float> a(rows), b(rows), ga(rows), gb(rows);
    cpu().loss_forward(c.params, values(ti), p.data(), a.data(), rows, 1);
    cpu().loss_forward(c.params, values(tf), p.data(), b.data(), rows, 1);
    cpu().loss_backward(c.params, values(ti), p.data(), scale.data(), ga.data(), rows, 1);
    cpu().loss_backward(c.params, values(tf), p.data(), scale.data(), gb.data(), rows, 1);
    EXPECT_EQ(a, b);
    EXPECT_EQ(ga, gb);
    for (Index r = 0; r < rows; ++r) EXPECT_NEAR(a[r], c.value(tf[r], p[r], c.params), 1e-6 + 1e-5 * std::abs(a[r]));
  }
}

// -log softmax(x)_y and its gradient softmax(x) - onehot(y), from the definition.
double log_softmax(const float* x, Index cols, Index y) {
  double s = 0;
  for (Index j = 0; j < cols; ++j) s += std::exp(static_cast<double>(x[j]));
  return x[y] - std::log(s);
}

TEST(LossFunctors, SparseCrossentropyMatchesScalarReferences) {
  const Index rows = 9, cols = 7;
  const std::vector<std::int64_t> y = [&] {
    const auto c = classes(rows, static_cast<int>(cols), 6);
    return std::vector<std::int64_t>(c.begin(), c.end());
  }();
  const std::vector<float> scale = uniform(rows, 0.1f, 2.f, 7);
  for (const bool logits : {true, false}) {
    SCOPED_TRACE(logits ? "from logits" : "probabilities");
    // Probabilities include a clipped zero and a clipped one-ish value in row 0.
    std::vector<float> p = logits ? uniform(rows * cols, -3.f, 3.f, 8) : distributions(rows, cols, 8);
    if (!logits) p[0] = 0.f;
    const LossParams lp{.kind = LossKind::sparse_categorical_crossentropy, .from_logits = logits};
    std::vector<float> l(rows), g(rows * cols);
    cpu().loss_forward(lp, values(y), p.data(), l.data(), rows, cols);
    cpu().loss_backward(lp, values(y), p.data(), scale.data(), g.data(), rows, cols);
    std::vector<double> want_l(rows), want_g(rows * cols);
    for (Index r = 0; r < rows; ++r) {
      const float* row = p.data() + r * cols;
      if (logits) {
        want_l[r] = -log_softmax(row, cols, y[r]);
        for (Index j = 0; j < cols; ++j)
          want_g[r * cols + j] = scale[r] * (std::exp(log_softmax(row, cols, j)) - (j == y[r]));
      } else {
        // Keras: log(clip(p)) as logits.
        double sum = 0;
        for (Index j = 0; j < cols; ++j) sum += clip(row[j], kEps, kOneMinusEps);
        want_l[r] = std::log(sum) - std::log(clip(row[y[r]], kEps, kOneMinusEps));
        for (Index j = 0; j < cols; ++j) {
          const bool in = row[j] >= kEps && row[j] <= kOneMinusEps;
          want_g[r * cols + j] = in ? scale[r] * (1 / sum - (j == y[r]) / static_cast<double>(row[j])) : 0.0;
        }
      }
    }
    expect_close(l, want_l, "per_example");
    expect_close(g, want_g, "grad");
    if (!logits) EXPECT_EQ(g[0], 0.f) << "a clipped probability passes no gradient";
  }
}

TEST(LossFunctors, CategoricalCrossentropyMatchesScalarReferences) {
  const Index rows = 11, cols = 3;
  const double smoothing = 0.15f;
  const std::vector<float> t = distributions(rows, cols, 9), scale = uniform(rows, 0.1f, 2.f, 10);
  auto smooth = [&](Index i) { return t[i] * (1 - smoothing) + smoothing / cols; };
  for (const bool logits : {true, false}) {
    SCOPED_TRACE(logits ? "from logits" : "probabilities");
    const std::vector<float> p = logits ? uniform(rows * cols, -3.f, 3.f, 11) : uniform(rows * cols, 0.1f, 2.f, 11);
    const LossParams lp{.kind = LossKind::categorical_crossentropy, .from_logits = logits,
                        .label_smoothing = smoothing};
    std::vector<float> l(rows), g(rows * cols);
    cpu().loss_forward(lp, values(t), p.data(), l.data(), rows, cols);
    cpu().loss_backward(lp, values(t), p.data(), scale.data(), g.data(), rows, cols);
    std::vector<double> want_l(rows), want_g(rows * cols);
    for (Index r = 0; r < rows; ++r) {
      const float* row = p.data() + r * cols;
      double t_sum = 0, p_sum = 0;
      for (Index j = 0; j < cols; ++j) t_sum += smooth(r * cols + j), p_sum += row[j];
      for (Index j = 0; j < cols; ++j) {
        const double tj = smooth(r * cols + j);
        if (logits) {
          want_l[r] -= tj * log_softmax(row, cols, j);
          want_g[r * cols + j] = scale[r] * (std::exp(log_softmax(row, cols, j)) * t_sum - tj);
        } else {
          // Renormalised, unclipped here (0.1 / (3 * 2) > 1e-7): d/dp_k of -sum_j t_j log(p_j / sum p).
          want_l[r] -= tj * std::log(row[j] / p_sum);
          want_g[r * cols + j] = scale[r] * (-tj / row[j] + t_sum / p_sum);
        }
      }
    }
    expect_close(l, want_l, "per_example");
    expect_close(g, want_g, "grad");
  }
}

TEST(LossFunctors, FusedSoftmaxGradientIsScaleTimesProbsMinusTargets) {
  const Index rows = 5, cols = 7;
  const std::vector<float> probs = distributions(rows, cols, 12), scale = uniform(rows, 0.1f, 2.f, 13);
  const std::vector<std::int32_t> y = classes(rows, static_cast<int>(cols), 14);
  std::vector<float> sparse(rows * cols), dense(rows * cols), smoothed(rows * cols);
  cpu().loss_backward_through_softmax({.kind = LossKind::sparse_categorical_crossentropy}, values(y), probs.data(),
                                      scale.data(), sparse.data(), rows, cols);
  const std::vector<float> t = one_hot(y, static_cast<int>(cols));
  cpu().loss_backward_through_softmax({.kind = LossKind::categorical_crossentropy}, values(t), probs.data(),
                                      scale.data(), dense.data(), rows, cols);
  cpu().loss_backward_through_softmax({.kind = LossKind::categorical_crossentropy, .label_smoothing = 0.25f},
                                      values(t), probs.data(), scale.data(), smoothed.data(), rows, cols);
  std::vector<double> want(rows * cols), want_smoothed(rows * cols);
  for (Index i = 0; i < rows * cols; ++i) {
    want[i] = scale[i / cols] * (probs[i] - t[i]);
    want_smoothed[i] = scale[i / cols] * (probs[i] - (t[i] * 0.75 + 0.25 / cols));
  }
  expect_close(sparse, want, "sparse");
  expect_close(dense, want, "categorical");
  expect_close(smoothed, want_smoothed, "smoothed", 1e-5, 1e-6);
  std::vector<float> out(rows * cols);
  EXPECT_THROW(cpu().loss_backward_through_softmax({.kind = LossKind::mean_squared_error}, values(t), probs.data(),
                                                   scale.data(), out.data(), rows, cols),
               std::logic_error);
}

TEST(LossFunctors, AnInvalidSparseLabelGivesItsRowNaNAndIsFound) {
  const Index rows = 4, cols = 3;
  const std::vector<float> p = distributions(rows, cols, 15), scale(rows, 1.f);
  const std::vector<float> labels = {0.f, 2.5f, 1.f, 3.f};
  std::vector<float> l(rows), g(rows * cols), fused(rows * cols);
  const LossParams lp{.kind = LossKind::sparse_categorical_crossentropy};
  cpu().loss_forward(lp, values(labels), p.data(), l.data(), rows, cols);
  cpu().loss_backward(lp, values(labels), p.data(), scale.data(), g.data(), rows, cols);
  cpu().loss_backward_through_softmax(lp, values(labels), p.data(), scale.data(), fused.data(), rows, cols);
  for (Index r = 0; r < rows; ++r) {
    const bool bad = r == 1 || r == 3;
    EXPECT_EQ(std::isnan(l[r]), bad) << r;
    for (Index j = 0; j < cols; ++j) {
      EXPECT_EQ(std::isnan(g[r * cols + j]), bad) << r;
      EXPECT_EQ(std::isnan(fused[r * cols + j]), bad) << r;
    }
  }
  std::int64_t first = -1;
  cpu().find_invalid_class(values(labels), rows, cols, kNoIgnoredClass, &first);
  EXPECT_EQ(first, 1);
  const std::vector<std::int32_t> negative = {0, 1, 2, 2, -1, 7};
  cpu().find_invalid_class(values(negative), 6, cols, kNoIgnoredClass, &first);
  EXPECT_EQ(first, 4);
  cpu().find_invalid_class(values(negative), 4, cols, kNoIgnoredClass, &first);
  EXPECT_EQ(first, 4) << "all valid: n";
  cpu().find_invalid_class(values(negative), 0, cols, kNoIgnoredClass, &first);
  EXPECT_EQ(first, 0) << "no labels: n = 0";
}

// ---- the training loop's weights, scale and sums -------------------------------------------------------------

TEST(LossFunctors, ExampleWeightsAreSampleWeightTimesClassWeight) {
  const Index n = 9;
  const std::vector<float> sw = uniform(n, 0.f, 2.f, 16);
  const std::vector<std::int32_t> y = classes(n, 4, 17);
  const std::vector<std::int64_t> ids = {0, 2, 5};
  const std::vector<double> cw = {0.5, 3.0, 7.0};
  auto class_weight = [&](int c) {
    for (std::size_t k = 0; k < ids.size(); ++k)
      if (ids[k] == c) return cw[k];
    return 1.0;
  };
  std::vector<double> w(n);
  ExampleWeightParams p{.examples = n, .sample_weight = values(sw), .labels = values(y), .label_size = 1,
                        .class_ids = ids.data(), .class_weights = cw.data(), .num_classes_weighted = 3};
  cpu().example_weights(p, w.data());
  for (Index e = 0; e < n; ++e) EXPECT_EQ(w[e], static_cast<double>(sw[e]) * class_weight(y[e])) << e;

  // One-hot float labels: the class is the row's argmax; a float scalar label is rounded.
  const std::vector<float> hot = one_hot(y, 4);
  p = {.examples = n, .labels = values(hot), .label_size = 4, .class_ids = ids.data(), .class_weights = cw.data(),
       .num_classes_weighted = 3};
  cpu().example_weights(p, w.data());
  for (Index e = 0; e < n; ++e) EXPECT_EQ(w[e], class_weight(y[e])) << e;
  const std::vector<float> near = {1.9f, 0.2f, 4.6f};
  p = {.examples = 3, .labels = values(near), .class_ids = ids.data(), .class_weights = cw.data(),
       .num_classes_weighted = 3};
  cpu().example_weights(p, w.data());
  EXPECT_EQ(w[0], 3.0);
  EXPECT_EQ(w[1], 0.5);
  EXPECT_EQ(w[2], 7.0);
  // uint8 labels; and no weights at all.
  const std::vector<std::uint8_t> bytes = {5, 1};
  p = {.examples = 2, .labels = values(bytes), .class_ids = ids.data(), .class_weights = cw.data(),
       .num_classes_weighted = 3};
  cpu().example_weights(p, w.data());
  EXPECT_EQ(w[0], 7.0);
  EXPECT_EQ(w[1], 1.0);
  cpu().example_weights({.examples = 2}, w.data());
  EXPECT_EQ(w[0], 1.0);
  EXPECT_EQ(w[1], 1.0);
}

TEST(LossFunctors, ScaleAndWeightedSums) {
  const Index examples = 7, per = 3, n = examples * per;
  std::vector<double> w(examples);
  for (Index e = 0; e < examples; ++e) w[e] = 0.25 * static_cast<double>(e + 1);
  const std::vector<float> x = uniform(n, -1.f, 3.f, 18);
  std::vector<float> scale(n);
  cpu().loss_scale(w.data(), n, per, 0.125, scale.data());
  for (Index i = 0; i < n; ++i) EXPECT_EQ(scale[i], static_cast<float>(0.125 * w[i / per])) << i;

  double weighted = 0, plain = 0;
  for (Index i = 0; i < n; ++i) weighted += w[i / per] * x[i], plain += x[i];
  double total = 10.0;
  cpu().accumulate_weighted_sum(x.data(), w.data(), n, per, 2.0, &total);
  EXPECT_NEAR(total, 10.0 + 2.0 * weighted, 1e-12);
  cpu().accumulate_weighted_sum(x.data(), nullptr, n, per, 0.5, &total);
  EXPECT_NEAR(total, 10.0 + 2.0 * weighted + 0.5 * plain, 1e-12) << "accumulates";
  cpu().accumulate_weighted_sum(x.data(), nullptr, 0, 1, 0.5, &total);
  EXPECT_NEAR(total, 10.0 + 2.0 * weighted + 0.5 * plain, 1e-12) << "no values add nothing";
}

TEST(LossFunctors, RegularizerPenaltyAndGradient) {
  const Index n = 1001;
  std::vector<float> w = uniform(n, -1.f, 1.f, 19);
  w[3] = 0.f;
  double s1 = 0, s2 = 0;
  for (float v : w) s1 += std::abs(v), s2 += static_cast<double>(v) * v;
  double total = 1.0;
  cpu().accumulate_penalty(w.data(), n, 0.01, 0.003, 4.0, &total);
  EXPECT_NEAR(total, 1.0 + 4.0 * (0.01 * s1 + 0.003 * s2), 1e-12);
  std::vector<float> g = uniform(n, -1.f, 1.f, 20), before = g;
  cpu().add_penalty_gradient(w.data(), g.data(), n, 0.01, 0.003);
  for (Index i = 0; i < n; ++i) {
    const float sign = w[i] > 0 ? 1.f : w[i] < 0 ? -1.f : 0.f;
    EXPECT_EQ(g[i], before[i] + (0.01f * sign + 0.006f * w[i])) << i;
  }
}

// ---- metrics -----------------------------------------------------------------------------------------------

using Kind = MeanMetricParams::Kind;

// The first index of the row's largest value.
Index first_argmax(const float* row, Index n) { return std::max_element(row, row + n) - row; }

bool in_top_k(const float* row, Index n, Index target, int k) {
  Index higher = 0;
  for (Index j = 0; j < n; ++j) {
    if (!std::isfinite(row[j])) return false;
    higher += row[j] > row[target];
  }
  return higher < k;
}

// state {total, count} from per-position values and weights (per example, per position or none), as Keras'
// MeanMetricWrapper reduces them.
std::vector<double> mean_reference(const std::vector<double>& v, Index examples, const std::vector<float>* w,
                                   bool per_position) {
  const Index per = static_cast<Index>(v.size()) / examples;
  double total = 0, count = 0;
  for (Index e = 0; e < examples; ++e) {
    double s = 0, ws = 0;
    for (Index q = e * per; q < (e + 1) * per; ++q) {
      const double wq = !w ? 1.0 : (*w)[per_position ? q : e];
      s += v[q] * wq;
      ws += wq;
    }
    total += s / per;
    count += w ? ws / per : 1.0;
  }
  return {total, count};
}

TEST(MetricFunctors, MeanMetricsMatchScalarReferences) {
  const Index examples = 5, positions_per = 3, cols = 7, rows = examples * positions_per;
  // y_pred [5, 3, 7]; labels per row; exact ties in row 0 (argmax takes the first, top-k counts both).
  std::vector<float> p = uniform(rows * cols, 0.f, 1.f, 21);
  p[1] = p[4] = 2.f;
  const std::vector<std::int32_t> y = classes(rows, static_cast<int>(cols), 22);
  std::vector<std::int32_t> y_tie = y;
  y_tie[0] = 4;
  const std::vector<float> t_dense = one_hot(y_tie, static_cast<int>(cols));
  const std::vector<float> w_example = uniform(examples, 0.f, 2.f, 23), w_position = uniform(rows, 0.f, 2.f, 24);

  struct Case {
    std::string name;
    Kind kind;
    AnyValues t;
    std::vector<double> v;  // the reference values per row
  };
  std::vector<double> sparse(rows), dense(rows), top(rows), sparse_top(rows);
  for (Index r = 0; r < rows; ++r) {
    const float* row = p.data() + r * cols;
    sparse[r] = first_argmax(row, cols) == y_tie[r];
    dense[r] = first_argmax(t_dense.data() + r * cols, cols) == first_argmax(row, cols);
    top[r] = in_top_k(row, cols, first_argmax(t_dense.data() + r * cols, cols), 2);
    sparse_top[r] = in_top_k(row, cols, y_tie[r], 2);
  }
  ASSERT_EQ(sparse[0], 0.0) << "tied: argmax is the first";
  ASSERT_EQ(sparse_top[0], 1.0) << "tied: both are in the top 1 of 2";
  const std::vector<Case> cases = {
      {"sparse_categorical_accuracy", Kind::sparse_categorical_accuracy, values(y_tie), sparse},
      {"categorical_accuracy", Kind::categorical_accuracy, values(t_dense), dense},
      {"top_k_categorical_accuracy", Kind::top_k_categorical_accuracy, values(t_dense), top},
      {"sparse_top_k_categorical_accuracy", Kind::sparse_top_k_categorical_accuracy, values(y_tie), sparse_top},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (int weighting = 0; weighting < 3; ++weighting) {
      const std::vector<float>* w = weighting == 0 ? nullptr : weighting == 1 ? &w_example : &w_position;
      MeanMetricParams mp{.kind = c.kind, .examples = examples, .positions = rows, .classes = cols, .k = 2,
                          .weight_per_position = weighting == 2};
      std::vector<double> state = {1.0, 2.0};
      cpu().update_mean_metric(mp, c.t, values(p), w ? values(*w) : AnyValues{}, state.data());
      std::vector<double> want = mean_reference(c.v, examples, w, weighting == 2);
      want[0] += 1.0;
      want[1] += 2.0;
      expect_close(state, want, "weighting " + std::to_string(weighting));
    }
  }
}

TEST(MetricFunctors, ElementwiseMeanMetricsMatchScalarReferences) {
  const Index examples = 7, per = 3, n = examples * per;
  const std::vector<float> p = uniform(n, 0.f, 1.f, 25);
  const std::vector<std::int32_t> t = classes(n, 2, 26);
  std::vector<float> p_round(n);
  for (Index i = 0; i < n; ++i) p_round[i] = std::round(p[i]);
  std::vector<double> binary(n), exact(n), raw(n);
  for (Index i = 0; i < n; ++i) {
    binary[i] = t[i] == (p[i] > 0.3f ? 1 : 0);
    exact[i] = t[i] == p_round[i];
    raw[i] = p[i];
  }
  const std::vector<float> w = uniform(examples, 0.f, 2.f, 27);
  auto run = [&](Kind kind, AnyValues y_pred, const std::vector<double>& want_values) {
    std::vector<double> state = {0, 0};
    cpu().update_mean_metric({.kind = kind, .examples = examples, .positions = n, .threshold = 0.3f}, values(t),
                             y_pred, values(w), state.data());
    expect_close(state, mean_reference(want_values, examples, &w, false), "weighted");
  };
  run(Kind::binary_accuracy, values(p), binary);
  run(Kind::accuracy, values(p_round), exact);
  run(Kind::values, values(p), raw);
  // No examples: nothing added.
  std::vector<double> state = {3, 4};
  cpu().update_mean_metric({.kind = Kind::values, .examples = 0, .positions = 0}, {}, values(p), {}, state.data());
  EXPECT_EQ(state, (std::vector<double>{3, 4}));
}

TEST(MetricFunctors, ThresholdCountsMatchScalarReferences) {
  const Index examples = 4, rows = 8, cols = 5, n = rows * cols;  // two rows per example
  std::vector<float> p = uniform(n, 0.f, 1.f, 28);
  p[2] = p[3] = 0.9f;  // a tie inside the top 2 of row 0
  p[5 + 1] = p[5 + 2] = p[5 + 3] = 0.95f;  // a three-way tie for the top 2 of row 1
  const std::vector<std::int32_t> t = classes(n, 2, 29);
  const std::vector<float> w = uniform(examples, 0.f, 2.f, 30);
  struct Case {
    float threshold;
    int top_k, class_id;
  };
  for (const Case c : {Case{0.5f, 0, -1}, Case{0.3f, 0, 2}, Case{-1e10f, 2, -1}, Case{0.4f, 2, 3}, Case{0.5f, 5, -1}}) {
    SCOPED_TRACE("threshold " + std::to_string(c.threshold) + " top_k " + std::to_string(c.top_k) + " class_id " +
                 std::to_string(c.class_id));
    for (const bool weighted : {false, true}) {
      double tp = 0, fp = 0, tn = 0, fn = 0;
      for (Index r = 0; r < rows; ++r) {
        // Keras' _filter_top_k: a stable sort by descending score; the rest become -1e10.
        std::vector<Index> order(cols);
        for (Index j = 0; j < cols; ++j) order[j] = j;
        const float* row = p.data() + r * cols;
        std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return row[a] > row[b]; });
        std::vector<float> s(p.begin() + r * cols, p.begin() + (r + 1) * cols);
        if (c.top_k > 0 && c.top_k < cols)
          for (Index k = c.top_k; k < cols; ++k) s[order[k]] = -1e10f;
        for (Index j = 0; j < cols; ++j) {
          if (c.class_id >= 0 && j != c.class_id) continue;
          const double wi = weighted ? w[r / 2] : 1.0;
          const bool pos = t[r * cols + j] != 0, pred = s[j] > c.threshold;
          tp += pos && pred ? wi : 0;
          fp += !pos && pred ? wi : 0;
          tn += !pos && !pred ? wi : 0;
          fn += pos && !pred ? wi : 0;
        }
      }
      std::vector<double> state = {0.5, 0.25, 0.375, 0.125};
      cpu().update_threshold_counts({.rows = rows, .classes = cols, .examples = examples, .threshold = c.threshold,
                                     .top_k = c.top_k, .class_id = c.class_id},
                                    values(t), values(p), weighted ? values(w) : AnyValues{}, state.data());
      expect_close(state, {0.5 + tp, 0.25 + fp, 0.375 + tn, 0.125 + fn}, weighted ? "weighted" : "unweighted");
    }
  }
  // Weights per element.
  const std::vector<float> we = uniform(n, 0.f, 2.f, 31);
  double tp = 0;
  for (Index i = 0; i < n; ++i) tp += (t[i] != 0 && p[i] > 0.5f) ? we[i] : 0;
  std::vector<double> state = {0, 0, 0, 0};
  cpu().update_threshold_counts({.rows = rows, .classes = cols, .examples = examples, .weight_per_element = true},
                                values(t), values(p), values(we), state.data());
  EXPECT_NEAR(state[0], tp, 1e-12);
}

TEST(MetricFunctors, AucCountsMatchKerasThresholds) {
  // 613 scores span three chunks of the deterministic histogram; logits and per-example weights too.
  for (const Index n : {Index{0}, Index{1}, Index{613}}) {
    for (const bool logits : {false, true}) {
      SCOPED_TRACE("n " + std::to_string(n) + (logits ? " logits" : ""));
      const int thresholds = 37;
      const std::vector<float> p = uniform(n, logits ? -4.f : -0.1f, logits ? 4.f : 1.1f, 32);
      const std::vector<std::int32_t> t = classes(n, 2, 33);
      const std::vector<float> w = uniform(n, 0.f, 2.f, 34);
      // Keras' thresholds: i / (T - 1), the first moved below 0 and the last above 1.
      std::vector<double> want(4 * thresholds, 0.0);
      for (int i = 0; i < thresholds; ++i) {
        const double th = i == 0 ? -1e-7 : i == thresholds - 1 ? 1 + 1e-7 : static_cast<double>(i) / (thresholds - 1);
        for (Index e = 0; e < n; ++e) {
          float s = p[e];
          if (logits) s = 1.f / (1.f + std::exp(-s));
          s = std::clamp(s, 0.f, 1.f);
          const bool above = s > th, pos = t[e] != 0;
          want[(above ? (pos ? 0 : 1) : (pos ? 3 : 2)) * thresholds + i] += w[e];
        }
      }
      std::vector<double> state(4 * thresholds, 0.0);
      cpu().update_auc({.n = n, .examples = n, .num_thresholds = thresholds, .from_logits = logits}, values(t),
                       values(p), values(w), state.data());
      expect_close(state, want, "counts", 1e-12, 1e-9);
    }
  }
}

// Per-label counts (multi_label), one column (class_id), label weights, and thresholds without AUC's epsilon: a
// score at or below 0 is above no threshold, and one threshold is 0.5.
TEST(MetricFunctors, AucCountsPerLabelAndColumn) {
  const Index rows = 211, cols = 3, n = rows * cols;  // more than one chunk
  std::vector<float> p = uniform(n, -0.1f, 1.1f, 40);
  p[4] = 0.f;
  const std::vector<std::int32_t> t = classes(n, 2, 41);
  const std::vector<float> w = uniform(rows, 0.f, 2.f, 42), lw = {0.5f, 2.f, 1.f};
  for (const int thresholds : {1, 9}) {
    for (const bool clamp : {false, true}) {
      SCOPED_TRACE("thresholds " + std::to_string(thresholds) + (clamp ? " clamped" : ""));
      const auto above = [&](float s, int i) {
        s = std::clamp(s, 0.f, 1.f);
        if (thresholds == 1) return s > 0.5f;
        const double th = static_cast<double>(i) / (thresholds - 1);
        return clamp && i == 0 ? true : s > th;
      };
      // multi_label with sample weights; single label with label weights and class_id.
      std::vector<double> multi(4 * cols * thresholds, 0.0), single(4 * thresholds, 0.0), col(4 * thresholds, 0.0);
      for (Index i = 0; i < n; ++i)
        for (int k = 0; k < thresholds; ++k) {
          const Index c = i % cols;
          const bool up = above(p[i], k), pos = t[i] != 0;
          const int cond = up ? (pos ? 0 : 1) : (pos ? 3 : 2);
          multi[(cond * cols + c) * thresholds + k] += w[i / cols];
          single[cond * thresholds + k] += lw[c];
          if (c == 1) col[cond * thresholds + k] += 1;
        }
      std::vector<double> got_multi(multi.size(), 0.0), got_single(single.size(), 0.0), got_col(col.size(), 0.0);
      const AucParams base{.n = n, .examples = rows, .num_thresholds = thresholds, .classes = cols,
                           .clamp_first = clamp};
      AucParams pm = base, ps = base, pc = base;
      pm.multi_label = true;
      ps.label_weights = values(lw);
      pc.class_id = 1;
      cpu().update_auc(pm, values(t), values(p), values(w), got_multi.data());
      cpu().update_auc(ps, values(t), values(p), AnyValues{}, got_single.data());
      cpu().update_auc(pc, values(t), values(p), AnyValues{}, got_col.data());
      expect_close(got_multi, multi, "multi_label", 1e-12, 1e-9);
      expect_close(got_single, single, "label_weights", 1e-12, 1e-9);
      expect_close(got_col, col, "class_id", 1e-12, 1e-9);
    }
  }
}

TEST(MetricFunctors, ColumnSumsMatchKerasFBetaAndR2) {
  const Index rows = 37, cols = 5, n = rows * cols;
  std::vector<float> p = uniform(n, -0.2f, 1.f, 43);
  p[5] = p[6] = 0.9f;          // a tie at the top of row 1: both count
  for (Index j = 0; j < cols; ++j) p[2 * cols + j] = 0.f;  // row 2 all zero: none counts
  const std::vector<float> t = one_hot(classes(rows, static_cast<int>(cols), 44), static_cast<int>(cols));
  const std::vector<float> w = uniform(rows, 0.f, 2.f, 45);
  for (const bool top : {false, true}) {
    std::vector<double> want(4 * cols, 0.0), r2(4 * cols, 0.0);
    for (Index r = 0; r < rows; ++r) {
      const float m = *std::max_element(p.begin() + r * cols, p.begin() + (r + 1) * cols);
      for (Index j = 0; j < cols; ++j) {
        const Index i = r * cols + j;
        const double b = top ? (p[i] >= m && std::fabs(p[i]) > 1e-9f) : p[i] > 0.3f, ti = t[i], wi = w[r];
        want[j] += wi * b * ti;
        want[cols + j] += wi * b * (1 - ti);
        want[2 * cols + j] += wi * (1 - b) * ti;
        want[3 * cols + j] += wi * ti;
        const double d = static_cast<double>(t[i] - p[i]);
        r2[j] += wi * ti;
        r2[cols + j] += wi * ti * ti;
        r2[2 * cols + j] += wi * d * d;
        r2[3 * cols + j] += wi;
      }
    }
    std::vector<double> got(4 * cols, 0.0), got_r2(4 * cols, 0.0);
    cpu().update_column_sums({.rows = rows, .columns = cols, .threshold = 0.3f, .top_of_row = top}, values(t),
                             values(p), values(w), got.data());
    cpu().update_column_sums({.kind = ColumnSumsParams::Kind::r2, .rows = rows, .columns = cols}, values(t),
                             values(p), values(w), got_r2.data());
    expect_close(got, want, top ? "fbeta, top of row" : "fbeta, threshold", 1e-6, 1e-6);
    expect_close(got_r2, r2, "r2", 1e-6, 1e-6);
  }
}

TEST(MetricFunctors, ConfusionMatrixCountsEachPositionOnce) {
  const Index n = 1031, k = 4;  // several chunks
  const std::vector<std::int32_t> t = classes(n, 5, 46), sp = classes(n, 4, 47);  // true class 4 is out of range
  const std::vector<float> scores = uniform(n * k, 0.f, 1.f, 48), w = uniform(n, 0.f, 3.f, 49);
  for (const bool sparse_pred : {true, false}) {
    std::vector<double> want(k * k, 0.0);
    for (Index q = 0; q < n; ++q) {
      const Index pred = sparse_pred ? sp[q]
                                     : std::max_element(scores.begin() + q * k, scores.begin() + (q + 1) * k) -
                                           (scores.begin() + q * k);
      if (t[q] == 2 || t[q] >= k) continue;  // ignore_class 2, and a class outside [0, k)
      want[t[q] * k + pred] += std::trunc(w[q]);
    }
    std::vector<double> got(k * k, 0.0);
    ConfusionMatrixParams p{.n = n, .examples = n, .num_classes = k, .classes = sparse_pred ? 1 : k,
                            .sparse_y_pred = sparse_pred, .has_ignore_class = true, .ignore_class = 2};
    cpu().update_confusion_matrix(p, values(t), sparse_pred ? values(sp) : values(scores), values(w), got.data());
    expect_close(got, want, sparse_pred ? "sparse" : "argmax", 0, 0);
  }
  // BinaryIoU: y_pred >= threshold is class 1.
  const std::vector<float> bt = {0, 1, 1, 0, 1}, bp = {0.5f, 0.49f, 0.7f, 0.2f, 0.5f};
  std::vector<double> got(4, 0.0);
  cpu().update_confusion_matrix({.n = 5, .examples = 5, .binary_threshold = true, .threshold = 0.5f}, values(bt),
                                values(bp), AnyValues{}, got.data());
  EXPECT_EQ(got, (std::vector<double>{1, 1, 1, 2}));
}

TEST(MetricFunctors, AddDoubles) {
  std::vector<double> y = {1, 2, 3}, x = {0.5, 0.25, 0.125};
  cpu().add_doubles(x.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<double>{1.5, 2.25, 3.125}));
  cpu().add_to_doubles(y.data(), 2, 1.0);
  EXPECT_EQ(y, (std::vector<double>{2.5, 3.25, 3.125}));
}

}  // namespace
}  // namespace tower::backend
