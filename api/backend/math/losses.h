#pragma once
// The arithmetic of losses, metrics and regularizers (backend.h, "losses and metrics"), once for both backends:
// functors over one output element (a row for per-example losses, an example for metric sums), and the terms
// that the backends' reductions add up, in double. The CPU backend runs them in its loops (cpu/cpu_losses.cpp),
// the CUDA backend in for_each and CUB (cuda/cuda_losses.cu). Sums follow today's host order: over j within a
// row, over positions within an example.
#include <cstdint>
#include <limits>

#include <math.h>

#include "api/backend/backend.h"
#include "api/backend/math/any_values.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// Keras' epsilon as the float32 values it clips with.
inline constexpr double kEpsilon = static_cast<double>(1e-7f);
inline constexpr double kOneMinusEpsilon = static_cast<double>(1.0f - 1e-7f);
// Keras' metrics_utils.NEG_INF: the score of an element outside the top k.
inline constexpr float kNegInf = -1e10f;

TOWER_HD double clamp(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }
TOWER_HD double larger(double a, double b) { return a > b ? a : b; }
TOWER_HD double quiet_nan() { return std::numeric_limits<double>::quiet_NaN(); }
// NaN fails the comparison, infinity exceeds it.
TOWER_HD bool is_finite(double x) { return ::fabs(x) <= std::numeric_limits<double>::max(); }

// A sparse label is a class index when it is a whole number in [0, classes).
TOWER_HD bool is_class_index(double v, Index classes) {
  return v >= 0 && v < static_cast<double>(classes) && v == ::floor(v);
}

// The first index of the largest of values[begin, begin + n) (TensorFlow's argmax).
TOWER_HD Index argmax(AnyValues values, Index begin, Index n) {
  Index best = 0;
  double best_value = value_at(values, begin);
  for (Index j = 1; j < n; ++j) {
    const double v = value_at(values, begin + j);
    if (v > best_value) {
      best = j;
      best_value = v;
    }
  }
  return best;
}

// TensorFlow's in_top_k: fewer than k of row[0, n) exceed row[target], and every value is finite.
TOWER_HD bool in_top_k(AnyValues values, Index begin, Index n, Index target, int k) {
  const double score = value_at(values, begin + target);
  Index higher = 0;
  for (Index j = 0; j < n; ++j) {
    const double v = value_at(values, begin + j);
    if (!is_finite(v)) return false;
    if (v > score) ++higher;
  }
  return higher < k;
}

// N doubles added componentwise: the value type of the backends' reductions.
template <int N>
struct Sums {
  double v[N];
  TOWER_HD Sums operator+(const Sums& o) const {
    Sums s;
    for (int k = 0; k < N; ++k) s.v[k] = v[k] + o.v[k];
    return s;
  }
};

struct SumsPlus {
  template <int N>
  TOWER_HD Sums<N> operator()(const Sums<N>& a, const Sums<N>& b) const { return a + b; }
};

// ---- elementwise losses: one term per element, reduced over the last axis ----------------------------------

struct SquaredError {
  TOWER_HD double value(double t, double p) const {
    const double d = p - t;
    return d * d;
  }
  TOWER_HD double derivative(double t, double p) const { return 2.0 * (p - t); }
};

struct AbsoluteError {
  TOWER_HD double value(double t, double p) const { return ::fabs(p - t); }
  TOWER_HD double derivative(double t, double p) const { return p > t ? 1.0 : (p < t ? -1.0 : 0.0); }
};

struct HuberTerm {
  double delta;
  TOWER_HD double value(double t, double p) const {
    const double e = p - t;
    return ::fabs(e) <= delta ? 0.5 * e * e : delta * ::fabs(e) - 0.5 * delta * delta;
  }
  TOWER_HD double derivative(double t, double p) const {
    const double e = p - t;
    if (::fabs(e) <= delta) return e;
    return e > 0 ? delta : -delta;
  }
};

struct KLDivergenceTerm {
  TOWER_HD double value(double t, double p) const {
    const double tc = clamp(t, kEpsilon, 1.0);
    return tc * ::log(tc / clamp(p, kEpsilon, 1.0));
  }
  TOWER_HD double derivative(double t, double p) const {
    if (p < kEpsilon || p > 1.0) return 0.0;
    return -clamp(t, kEpsilon, 1.0) / p;
  }
};

struct BinaryCrossentropyTerm {
  double smoothing;
  bool from_logits;
  TOWER_HD double smooth(double t) const { return t * (1.0 - smoothing) + 0.5 * smoothing; }
  TOWER_HD double value(double t, double p) const {
    t = smooth(t);
    if (from_logits) return larger(p, 0.0) - p * t + ::log1p(::exp(-::fabs(p)));
    const double c = clamp(p, kEpsilon, kOneMinusEpsilon);
    return -(t * ::log(c) + (1.0 - t) * ::log(1.0 - c));
  }
  TOWER_HD double derivative(double t, double p) const {
    t = smooth(t);
    if (from_logits) return 1.0 / (1.0 + ::exp(-p)) - t;
    if (p < kEpsilon || p > kOneMinusEpsilon) return 0.0;
    return -t / p + (1.0 - t) / (1.0 - p);
  }
};

// Keras' hinge labels: 0/1 labels become -1/1 when every label of the batch is 0 or 1 (stats[0], the number of
// other labels, is 0); other labels are taken as they are. The derivative is TensorFlow's maximum's: the margin's
// where 1 - t p >= 0.
struct HingeTerm {
  bool squared;
  const double* stats;
  TOWER_HD double label(double t) const { return stats[0] == 0 ? 2.0 * t - 1.0 : t; }
  TOWER_HD double value(double t, double p) const {
    const double m = larger(1.0 - label(t) * p, 0.0);
    return squared ? m * m : m;
  }
  TOWER_HD double derivative(double t, double p) const {
    t = label(t);
    const double m = 1.0 - t * p;
    if (m < 0) return 0.0;
    return squared ? -2.0 * m * t : -t;
  }
};

// log(cosh(x)) as Keras writes it, x + softplus(-2x) - log(2), with x = y_pred - y_true; its derivative is tanh(x).
struct LogCoshTerm {
  TOWER_HD double value(double t, double p) const {
    const double x = p - t;
    return x + larger(-2.0 * x, 0.0) + ::log1p(::exp(-::fabs(2.0 * x))) - ::log(2.0);
  }
  TOWER_HD double derivative(double t, double p) const { return ::tanh(p - t); }
};

struct PoissonTerm {
  TOWER_HD double value(double t, double p) const { return p - t * ::log(p + kEpsilon); }
  TOWER_HD double derivative(double t, double p) const { return 1.0 - t / (p + kEpsilon); }
};

// (log(max(p, eps) + 1) - log(max(t, eps) + 1))^2; the maximum passes p's gradient where p >= eps.
struct SquaredLogError {
  TOWER_HD double difference(double t, double p) const {
    return ::log(larger(p, kEpsilon) + 1.0) - ::log(larger(t, kEpsilon) + 1.0);
  }
  TOWER_HD double value(double t, double p) const {
    const double d = difference(t, p);
    return d * d;
  }
  TOWER_HD double derivative(double t, double p) const {
    return p >= kEpsilon ? 2.0 * difference(t, p) / (p + 1.0) : 0.0;
  }
};

// 100 |y_true - y_pred| / max(|y_true|, eps).
struct AbsolutePercentageError {
  TOWER_HD double value(double t, double p) const { return 100.0 * ::fabs(t - p) / larger(::fabs(t), kEpsilon); }
  TOWER_HD double derivative(double t, double p) const {
    const double sign = p > t ? 1.0 : (p < t ? -1.0 : 0.0);
    return 100.0 * sign / larger(::fabs(t), kEpsilon);
  }
};

// Keras' binary_focal_crossentropy: w (1 - p_t)^gamma bce with t smoothed as BinaryCrossentropyTerm's, p the
// probability (sigmoid(y_pred) with from_logits), p_t = t p + (1 - t)(1 - p), w = t alpha + (1 - t)(1 - alpha) with
// class balancing (else 1), and bce the crossentropy of p: TensorFlow's logits form with from_logits (Keras' sigmoid
// keeps its logits), clipped probabilities otherwise.
struct BinaryFocalTerm {
  BinaryCrossentropyTerm bce;
  double alpha, gamma;
  bool balancing;
  TOWER_HD double probability(double p) const { return bce.from_logits ? 1.0 / (1.0 + ::exp(-p)) : p; }
  TOWER_HD double weight(double t) const { return balancing ? t * alpha + (1.0 - t) * (1.0 - alpha) : 1.0; }
  TOWER_HD double value(double t, double p) const {
    const double q = probability(p), ts = bce.smooth(t);
    const double p_t = ts * q + (1.0 - ts) * (1.0 - q);
    return weight(ts) * ::pow(1.0 - p_t, gamma) * bce.value(t, p);
  }
  TOWER_HD double derivative(double t, double p) const {
    const double q = probability(p), ts = bce.smooth(t);
    const double p_t = ts * q + (1.0 - ts) * (1.0 - q);
    const double dq = bce.from_logits ? q * (1.0 - q) : 1.0;  // dq / d y_pred
    // d(1 - p_t)^gamma / dq, 0 for gamma 0 (no focal factor, whatever 1 - p_t is).
    const double dfocal = gamma == 0 ? 0.0 : -gamma * ::pow(1.0 - p_t, gamma - 1.0) * (2.0 * ts - 1.0);
    return weight(ts) * (dfocal * dq * bce.value(t, p) + ::pow(1.0 - p_t, gamma) * bce.derivative(t, p));
  }
};

// per_example[r] = the sum of row r's terms / divisor (the number of columns for a mean, 1 for a sum).
template <class Term>
struct ElementwiseLossForward {
  Term term;
  AnyValues t;
  const float* p;
  float* per_example;
  Index cols;
  double divisor;
  TOWER_HD void operator()(Index r) const {
    double sum = 0;
    for (Index j = r * cols; j < (r + 1) * cols; ++j) sum += term.value(value_at(t, j), p[j]);
    per_example[r] = static_cast<float>(sum / divisor);
  }
};

// Over elements: grad[i] = scale of i's row / divisor * the term's derivative.
template <class Term>
struct ElementwiseLossBackward {
  Term term;
  AnyValues t;
  const float* p;
  const float* scale;
  float* grad;
  Index cols;
  double divisor;
  TOWER_HD void operator()(Index i) const {
    const double f = scale[i / cols] / divisor;
    grad[i] = static_cast<float>(f * term.derivative(value_at(t, i), p[i]));
  }
};

// ---- sparse categorical crossentropy: a class index per row ---------------------------------------------------

// With an ignored class, a row labelled with it has loss 0 and the others are multiplied by rows / kept, kept being
// stats[0] (KeptRow's count).
struct IgnoredClass {
  double label = quiet_nan();  // NaN: none
  const double* stats = nullptr;
  Index rows = 0;
  TOWER_HD bool ignores(double v) const { return v == label; }
  TOWER_HD double factor() const { return stats ? static_cast<double>(rows) / stats[0] : 1.0; }
};

// Over rows. Logits: m + log(sum_j exp(p_j - m)) - p_y with m the row's maximum; probabilities:
// log(sum_j c_j) - log(c_y), c = clip(p, 1e-7, 1 - 1e-7); times the ignored class's factor.
struct SparseCrossentropyForward {
  AnyValues labels;
  const float* p;
  float* per_example;
  Index cols;
  bool from_logits;
  IgnoredClass ignored;
  TOWER_HD void operator()(Index r) const {
    const double label = value_at(labels, r);
    if (ignored.ignores(label)) {
      per_example[r] = 0.f;
      return;
    }
    if (!is_class_index(label, cols)) {
      per_example[r] = static_cast<float>(quiet_nan());
      return;
    }
    const float* row = p + r * cols;
    const Index y = static_cast<Index>(label);
    if (from_logits) {
      float m = row[0];
      for (Index j = 1; j < cols; ++j) m = row[j] > m ? row[j] : m;
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += ::exp(static_cast<double>(row[j]) - m);
      per_example[r] = static_cast<float>(ignored.factor() * (m + ::log(sum) - row[y]));
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += clamp(row[j], kEpsilon, kOneMinusEpsilon);
      per_example[r] = static_cast<float>(
          ignored.factor() * (::log(sum) - ::log(clamp(row[y], kEpsilon, kOneMinusEpsilon))));
    }
  }
};

// The class of row r's sparse label; -1, with the row's gradient g[0, cols) set to NaN, when the label is not a
// class index (a bad label poisons the step instead of indexing out of bounds), or to 0 when it is the ignored class.
TOWER_HD Index sparse_class_or_nan_row(const AnyValues& labels, Index r, Index cols, const IgnoredClass& ignored,
                                       float* g) {
  const double label = value_at(labels, r);
  const bool ignore = ignored.ignores(label);
  if (!ignore && is_class_index(label, cols)) return static_cast<Index>(label);
  for (Index j = 0; j < cols; ++j) g[j] = ignore ? 0.f : static_cast<float>(quiet_nan());
  return -1;
}

// Over rows: scale[r] (softmax(p) - onehot(y)) for logits; scale[r] (1 / sum_j c_j - onehot(y) / p) for
// probabilities, 0 where p is clipped.
struct SparseCrossentropyBackward {
  AnyValues labels;
  const float* p;
  const float* scale;
  float* grad;
  Index cols;
  bool from_logits;
  IgnoredClass ignored;
  TOWER_HD void operator()(Index r) const {
    const float* row = p + r * cols;
    float* g = grad + r * cols;
    const Index y = sparse_class_or_nan_row(labels, r, cols, ignored, g);
    if (y < 0) return;
    const double sc = scale[r] * ignored.factor();
    if (from_logits) {
      float m = row[0];
      for (Index j = 1; j < cols; ++j) m = row[j] > m ? row[j] : m;
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += ::exp(static_cast<double>(row[j]) - m);
      for (Index j = 0; j < cols; ++j)
        g[j] = static_cast<float>(sc * (::exp(static_cast<double>(row[j]) - m) / sum - (j == y ? 1.0 : 0.0)));
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += clamp(row[j], kEpsilon, kOneMinusEpsilon);
      for (Index j = 0; j < cols; ++j) {
        const double pj = row[j];
        g[j] = (pj < kEpsilon || pj > kOneMinusEpsilon)
                   ? 0.f
                   : static_cast<float>(sc * (1.0 / sum - (j == y ? 1.0 / pj : 0.0)));
      }
    }
  }
};

// Over rows: scale[r] (probs - onehot(y)). A row at a time, so the label is read and checked once per row.
struct SparseCrossentropySoftmaxBackward {
  AnyValues labels;
  const float* probs;
  const float* scale;
  float* grad;
  Index cols;
  IgnoredClass ignored;
  TOWER_HD void operator()(Index r) const {
    const float* p = probs + r * cols;
    float* g = grad + r * cols;
    const Index y = sparse_class_or_nan_row(labels, r, cols, ignored, g);
    if (y < 0) return;
    const double sc = scale[r] * ignored.factor();
    for (Index j = 0; j < cols; ++j) g[j] = static_cast<float>(sc * (p[j] - (j == y ? 1.0 : 0.0)));
  }
};

// ---- categorical crossentropy: a distribution per row, smoothed -------------------------------------------------

// The smoothed targets of one row: t_j = y_true_j (1 - smoothing) + smoothing / cols.
struct SmoothedRow {
  AnyValues labels;
  Index begin, cols;
  double smoothing;
  TOWER_HD double operator[](Index j) const {
    return value_at(labels, begin + j) * (1.0 - smoothing) + smoothing / static_cast<double>(cols);
  }
  TOWER_HD double sum() const {
    double s = 0;
    for (Index j = 0; j < cols; ++j) s += (*this)[j];
    return s;
  }
};

TOWER_HD bool clipped(double q) { return q < kEpsilon || q > kOneMinusEpsilon; }

// Over rows. Logits: sum_j t_j (lse - p_j); probabilities: -sum_j t_j log(clip(q_j)), q = p / sum(p).
struct CategoricalCrossentropyForward {
  AnyValues labels;
  const float* p;
  float* per_example;
  Index cols;
  bool from_logits;
  double smoothing;
  TOWER_HD void operator()(Index r) const {
    const float* row = p + r * cols;
    const SmoothedRow t{labels, r * cols, cols, smoothing};
    double loss = 0;
    if (from_logits) {
      float m = row[0];
      for (Index j = 1; j < cols; ++j) m = row[j] > m ? row[j] : m;
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += ::exp(static_cast<double>(row[j]) - m);
      const double lse = m + ::log(sum);
      for (Index j = 0; j < cols; ++j) loss += t[j] * (lse - row[j]);
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += row[j];
      for (Index j = 0; j < cols; ++j) loss -= t[j] * ::log(clamp(row[j] / sum, kEpsilon, kOneMinusEpsilon));
    }
    per_example[r] = static_cast<float>(loss);
  }
};

// Over rows. Logits: scale (softmax(p) sum_j t_j - t). Probabilities: with dL/dq_j = -t_j / q_j where q_j is not
// clipped (else 0), dL/dp_k = (dL/dq_k - sum_j dL/dq_j q_j) / sum(p).
struct CategoricalCrossentropyBackward {
  AnyValues labels;
  const float* p;
  const float* scale;
  float* grad;
  Index cols;
  bool from_logits;
  double smoothing;
  TOWER_HD void operator()(Index r) const {
    const float* row = p + r * cols;
    float* g = grad + r * cols;
    const SmoothedRow t{labels, r * cols, cols, smoothing};
    const double sc = scale[r];
    if (from_logits) {
      float m = row[0];
      for (Index j = 1; j < cols; ++j) m = row[j] > m ? row[j] : m;
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += ::exp(static_cast<double>(row[j]) - m);
      const double t_sum = t.sum();
      for (Index j = 0; j < cols; ++j)
        g[j] = static_cast<float>(sc * (::exp(static_cast<double>(row[j]) - m) / sum * t_sum - t[j]));
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += row[j];
      double dot = 0;
      for (Index j = 0; j < cols; ++j) dot += clipped(row[j] / sum) ? 0.0 : -t[j];
      for (Index k = 0; k < cols; ++k) {
        const double q = row[k] / sum;
        const double dq = clipped(q) ? 0.0 : -t[k] / q;
        g[k] = static_cast<float>(sc * (dq - dot) / sum);
      }
    }
  }
};

// Over rows: scale (probs sum_j t_j - t).
struct CategoricalCrossentropySoftmaxBackward {
  AnyValues labels;
  const float* probs;
  const float* scale;
  float* grad;
  Index cols;
  double smoothing;
  TOWER_HD void operator()(Index r) const {
    const SmoothedRow t{labels, r * cols, cols, smoothing};
    const double t_sum = t.sum(), sc = scale[r];
    for (Index j = 0; j < cols; ++j)
      grad[r * cols + j] = static_cast<float>(sc * (probs[r * cols + j] * t_sum - t[j]));
  }
};

// ---- the other per-row losses ------------------------------------------------------------------------------------

// Over rows: max(neg - pos + 1, 0) with pos = sum_j t_j p_j and neg = max_j (1 - t_j) p_j.
struct CategoricalHinge {
  AnyValues labels;
  const float* p;
  Index cols;
  TOWER_HD double negative(Index r, Index j) const {
    return (1.0 - value_at(labels, r * cols + j)) * static_cast<double>(p[r * cols + j]);
  }
  TOWER_HD double largest_negative(Index r) const {
    double neg = negative(r, 0);
    for (Index j = 1; j < cols; ++j) neg = larger(neg, negative(r, j));
    return neg;
  }
  TOWER_HD double margin(Index r) const {
    double pos = 0;
    for (Index j = 0; j < cols; ++j) pos += value_at(labels, r * cols + j) * static_cast<double>(p[r * cols + j]);
    return largest_negative(r) - pos + 1.0;
  }
};

struct CategoricalHingeForward {
  CategoricalHinge h;
  float* per_example;
  TOWER_HD void operator()(Index r) const { per_example[r] = static_cast<float>(larger(h.margin(r), 0.0)); }
};

// Over rows: where the margin is >= 0 (TensorFlow's maximum), d/dp_j = (1 - t_j) [j attains neg] / ties - t_j,
// the maximum's gradient shared among equal largest values as TensorFlow's reduce_max shares it.
struct CategoricalHingeBackward {
  CategoricalHinge h;
  const float* scale;
  float* grad;
  TOWER_HD void operator()(Index r) const {
    const Index cols = h.cols;
    float* g = grad + r * cols;
    if (h.margin(r) < 0) {
      for (Index j = 0; j < cols; ++j) g[j] = 0.f;
      return;
    }
    const double neg = h.largest_negative(r);
    Index ties = 0;
    for (Index j = 0; j < cols; ++j) ties += h.negative(r, j) == neg ? 1 : 0;
    const double sc = scale[r];
    for (Index j = 0; j < cols; ++j) {
      const double t = value_at(h.labels, r * cols + j);
      const double dneg = h.negative(r, j) == neg ? (1.0 - t) / static_cast<double>(ties) : 0.0;
      g[j] = static_cast<float>(sc * (dneg - t));
    }
  }
};

// Keras' l2 normalisation's factor: min(rsqrt(sum x^2), 1 / eps), the cap being float32(1 / 1e-7).
inline constexpr double kInverseNormCap = static_cast<double>(static_cast<float>(1.0 / 1e-7));
TOWER_HD bool inverse_norm_capped(double square_sum) {
  return !(square_sum > 0) || 1.0 / ::sqrt(square_sum) > kInverseNormCap;
}
TOWER_HD double inverse_norm(double square_sum) {
  return inverse_norm_capped(square_sum) ? kInverseNormCap : 1.0 / ::sqrt(square_sum);
}

// Over rows: -sum_j normalize(t)_j normalize(p)_j over the last axis.
struct CosineSimilarity {
  AnyValues labels;
  const float* p;
  Index cols;
  // {sum t^2, sum p^2, sum t p}
  TOWER_HD void sums(Index r, double& tt, double& pp, double& tp) const {
    tt = pp = tp = 0;
    for (Index j = r * cols; j < (r + 1) * cols; ++j) {
      const double t = value_at(labels, j), q = p[j];
      tt += t * t;
      pp += q * q;
      tp += t * q;
    }
  }
};

struct CosineSimilarityForward {
  CosineSimilarity c;
  float* per_example;
  TOWER_HD void operator()(Index r) const {
    double tt, pp, tp;
    c.sums(r, tt, pp, tp);
    per_example[r] = static_cast<float>(-tp * inverse_norm(tt) * inverse_norm(pp));
  }
};

// Over rows: d/dp_k = -a_k ip + (sum_j a_j p_j) p_k pp^(-3/2) with a = normalize(t) and ip = p's inverse norm; the
// second term only where the norm's cap is not taken (TensorFlow's minimum passes the gradient to rsqrt there).
struct CosineSimilarityBackward {
  CosineSimilarity c;
  const float* scale;
  float* grad;
  TOWER_HD void operator()(Index r) const {
    double tt, pp, tp;
    c.sums(r, tt, pp, tp);
    const double it = inverse_norm(tt), ip = inverse_norm(pp);
    const double curve = inverse_norm_capped(pp) ? 0.0 : tp * it / (pp * ::sqrt(pp));
    const double sc = scale[r];
    for (Index j = r * c.cols; j < (r + 1) * c.cols; ++j)
      grad[j] = static_cast<float>(sc * (-value_at(c.labels, j) * it * ip + curve * c.p[j]));
  }
};

// Keras' categorical_focal_crossentropy over a row: with t smoothed (SmoothedRow), probabilities p (softmax(y_pred)
// with from_logits), q = p / sum(p) and c = clip(q, eps, 1 - eps), the loss is sum_j alpha (1 - c_j)^gamma
// (-t_j log c_j).
struct CategoricalFocal {
  AnyValues labels;
  const float* p;
  Index cols;
  bool from_logits;
  double smoothing, alpha, gamma;
  TOWER_HD SmoothedRow targets(Index r) const { return {labels, r * cols, cols, smoothing}; }
  TOWER_HD double term(double t, double q) const {
    const double c = clamp(q, kEpsilon, kOneMinusEpsilon);
    return alpha * ::pow(1.0 - c, gamma) * -t * ::log(c);
  }
  // d term / d q, 0 where q is clipped.
  TOWER_HD double term_derivative(double t, double q) const {
    if (clipped(q)) return 0.0;
    const double focal = gamma == 0 ? 0.0 : gamma * ::pow(1.0 - q, gamma - 1.0) * t * ::log(q);
    return alpha * (focal - ::pow(1.0 - q, gamma) * t / q);
  }
};

// One row's probabilities without a copy: q_j = p_j / sum(p), p = softmax(y_pred) with from_logits.
struct FocalRow {
  const CategoricalFocal& f;
  Index r;
  float m = 0;     // logits: the row's maximum
  double z = 1;    // logits: sum_j exp(x_j - m)
  double sum = 0;  // sum_j p_j
  TOWER_HD FocalRow(const CategoricalFocal& focal, Index row) : f(focal), r(row) {
    const float* x = f.p + r * f.cols;
    if (f.from_logits) {
      m = x[0];
      for (Index j = 1; j < f.cols; ++j) m = x[j] > m ? x[j] : m;
      z = 0;
      for (Index j = 0; j < f.cols; ++j) z += ::exp(static_cast<double>(x[j]) - m);
    }
    for (Index j = 0; j < f.cols; ++j) sum += probability(j);
  }
  TOWER_HD double probability(Index j) const {
    const double x = f.p[r * f.cols + j];
    return f.from_logits ? ::exp(x - m) / z : x;
  }
  TOWER_HD double q(Index j) const { return probability(j) / sum; }
};

struct CategoricalFocalForward {
  CategoricalFocal f;
  float* per_example;
  TOWER_HD void operator()(Index r) const {
    const FocalRow row(f, r);
    const SmoothedRow t = f.targets(r);
    double loss = 0;
    for (Index j = 0; j < f.cols; ++j) loss += f.term(t[j], row.q(j));
    per_example[r] = static_cast<float>(loss);
  }
};

// Over rows: with g_j = d term_j / d q_j, dL/dp_k = (g_k - sum_j g_j q_j) / sum(p); for logits, further through the
// softmax: dL/dx_k = p_k (G_k - sum_j G_j p_j), G = dL/dp.
struct CategoricalFocalBackward {
  CategoricalFocal f;
  const float* scale;
  float* grad;
  TOWER_HD void operator()(Index r) const {
    const FocalRow row(f, r);
    const SmoothedRow t = f.targets(r);
    double gq = 0;  // sum_j g_j q_j
    for (Index j = 0; j < f.cols; ++j) gq += f.term_derivative(t[j], row.q(j)) * row.q(j);
    // dL/dp_k, and for logits sum_k dL/dp_k p_k
    double gp = 0;
    if (f.from_logits)
      for (Index k = 0; k < f.cols; ++k)
        gp += (f.term_derivative(t[k], row.q(k)) - gq) / row.sum * row.probability(k);
    const double sc = scale[r];
    for (Index k = 0; k < f.cols; ++k) {
      const double dp = (f.term_derivative(t[k], row.q(k)) - gq) / row.sum;
      grad[r * f.cols + k] = static_cast<float>(sc * (f.from_logits ? row.probability(k) * (dp - gp) : dp));
    }
  }
};

// Dice and Tversky: from the sums {I, A, B} = {sum t p, sum t, sum p} (dice) or {sum t p, sum t (1 - p),
// sum p (1 - t)} (tversky), dice is 1 - 2I / (A + B + eps) and tversky 1 - I / (I + alpha A + beta B + eps).
struct Overlap {
  bool tversky;
  double alpha, beta;
  TOWER_HD Sums<4> terms(double t, double p, double s) const {
    return tversky ? Sums<4>{{t * p, t * (1.0 - p), p * (1.0 - t), s}} : Sums<4>{{t * p, t, p, s}};
  }
  TOWER_HD double denominator(const double* sums) const {
    return tversky ? sums[0] + alpha * sums[1] + beta * sums[2] + kEpsilon : sums[1] + sums[2] + kEpsilon;
  }
  TOWER_HD double value(const double* sums) const {
    return 1.0 - (tversky ? sums[0] : 2.0 * sums[0]) / denominator(sums);
  }
  // d value / d p of an element of label t.
  TOWER_HD double derivative(const double* sums, double t) const {
    const double den = denominator(sums);
    if (tversky) return -(t * den - sums[0] * (t - alpha * t + beta * (1.0 - t))) / (den * den);
    return -(2.0 * t * den - 2.0 * sums[0]) / (den * den);
  }
};

// Over the n elements of the batch: Overlap's terms, and scale[i / cols] / cols (their sum is the sum of the scales).
struct OverlapStats {
  Overlap o;
  AnyValues labels;
  const float* p;
  const float* scale;  // null in the forward pass
  Index cols;
  TOWER_HD Sums<4> operator()(Index i) const {
    const double s = scale ? static_cast<double>(scale[i / cols]) / static_cast<double>(cols) : 0.0;
    return o.terms(value_at(labels, i), p[i], s);
  }
};

// Over rows: row r's own value, or with `batch` (the whole batch's OverlapStats) the batch's value in every row.
struct OverlapForward {
  OverlapStats s;
  const double* batch;
  float* per_example;
  TOWER_HD void operator()(Index r) const {
    if (batch) {
      per_example[r] = static_cast<float>(s.o.value(batch));
      return;
    }
    Sums<4> sums{};
    for (Index i = r * s.cols; i < (r + 1) * s.cols; ++i) sums = sums + s(i);
    per_example[r] = static_cast<float>(s.o.value(sums.v));
  }
};

// Over rows: scale[r] d value / d p; with `batch`, every row's value is the batch's, so its gradient is the sum of
// the scales (batch[3]) times the batch value's.
struct OverlapBackward {
  OverlapStats s;
  const double* batch;
  float* grad;
  TOWER_HD void operator()(Index r) const {
    Sums<4> sums{};
    if (!batch)
      for (Index i = r * s.cols; i < (r + 1) * s.cols; ++i) sums = sums + s(i);
    const double* used = batch ? batch : sums.v;
    const double sc = batch ? batch[3] : static_cast<double>(s.scale[r]);
    for (Index i = r * s.cols; i < (r + 1) * s.cols; ++i)
      grad[i] = static_cast<float>(sc * s.o.derivative(used, value_at(s.labels, i)));
  }
};

// Over elements: {1, 0, 0, 0} for a label other than 0 and 1 (hinge's test).
struct NonBinaryLabel {
  AnyValues labels;
  TOWER_HD Sums<4> operator()(Index i) const {
    const double v = value_at(labels, i);
    return {{v == 0 || v == 1 ? 0.0 : 1.0, 0.0, 0.0, 0.0}};
  }
};

// Over rows: {1, 0, 0, 0} for a row not labelled with the ignored class.
struct KeptRow {
  AnyValues labels;
  double ignored;
  TOWER_HD Sums<4> operator()(Index r) const { return {{value_at(labels, r) == ignored ? 0.0 : 1.0, 0.0, 0.0, 0.0}}; }
};

// ---- the training loop's weights, scale and sums ------------------------------------------------------------------

// Over examples: weights[e] as ExampleWeightParams defines.
struct ExampleWeight {
  ExampleWeightParams p;
  double* weights;
  TOWER_HD int class_of(Index e) const {
    const Index begin = e * p.label_size;
    if (p.labels.dtype != DType::float32) return static_cast<int>(value_at(p.labels, begin));
    if (p.label_size == 1) return static_cast<int>(::lroundf(static_cast<const float*>(p.labels.data)[begin]));
    return static_cast<int>(argmax(p.labels, begin, p.label_size));
  }
  TOWER_HD void operator()(Index e) const {
    double w = p.sample_weight.data ? value_at(p.sample_weight, e) : 1.0;
    if (p.num_classes_weighted > 0) {
      const int c = class_of(e);
      for (Index k = 0; k < p.num_classes_weighted; ++k)
        if (p.class_ids[k] == c) {
          w *= p.class_weights[k];
          break;
        }
    }
    weights[e] = w;
  }
};

struct LossScale {
  const double* weights;
  Index per;
  double k;
  float* scale;
  TOWER_HD void operator()(Index i) const { scale[i] = static_cast<float>(k * weights[i / per]); }
};

// ---- reductions: a term per index, added up in double ---------------------------------------------------------

// weights[i / per] * x[i] (weight 1 without weights).
struct WeightedValue {
  const float* x;
  const double* weights;
  Index per;
  TOWER_HD Sums<1> operator()(Index i) const {
    return {{weights ? weights[i / per] * static_cast<double>(x[i]) : static_cast<double>(x[i])}};
  }
};

// *total += sum * factor.
struct AddScaledSum {
  double* total;
  double factor;
  TOWER_HD void operator()(const Sums<1>& s) const { *total += s.v[0] * factor; }
};

// 1 for a kept position of a mask (non-zero), 0 for a masked one.
struct KeptPosition {
  const float* mask;
  TOWER_HD Sums<1> operator()(Index i) const { return {{mask[i] != 0.f ? 1.0 : 0.0}}; }
};

// *total = sum.
struct StoreSum {
  double* total;
  TOWER_HD void operator()(const Sums<1>& s) const { *total = s.v[0]; }
};

// Keras' apply_mask for a sum_over_batch_size loss: a masked value weighs 0, a kept one its example's weight times
// n / kept, kept (the number of kept values) being at out[n], so the mean over all n values is the mean over the
// kept ones (all 0 when none is kept).
struct MaskedLossWeight {
  const double* weights;
  Index per;
  const float* mask;
  Index n;
  double* out;
  TOWER_HD void operator()(Index i) const {
    out[i] = mask[i] != 0.f ? weights[i / per] * static_cast<double>(n) / out[n] : 0.0;
  }
};

// A metric's weight of one position under a mask (Keras' apply_mask with reduction "sum"): its example's weight
// (1 without weights) where kept, 0 where masked.
struct MaskedMetricWeight {
  const float* weights;
  Index per;
  const float* mask;
  float* out;
  TOWER_HD void operator()(Index i) const { out[i] = mask[i] != 0.f ? (weights ? weights[i / per] : 1.f) : 0.f; }
};

// {|w|, w^2} of one weight.
struct PenaltyTerms {
  const float* w;
  TOWER_HD Sums<2> operator()(Index i) const {
    const float v = w[i];
    return {{static_cast<double>(::fabsf(v)), static_cast<double>(v) * v}};
  }
};

// *total += factor * (l1 * sum|w| + l2 * sum w^2).
struct AddPenalty {
  double* total;
  double l1, l2, factor;
  TOWER_HD void operator()(const Sums<2>& s) const { *total += factor * (l1 * s.v[0] + l2 * s.v[1]); }
};

struct PenaltyGradient {
  const float* w;
  float* grad;
  float l1, two_l2;
  TOWER_HD void operator()(Index i) const {
    const float v = w[i];
    grad[i] += l1 * (v > 0.f ? 1.f : v < 0.f ? -1.f : 0.f) + two_l2 * v;
  }
};

// i when labels[i] is neither a class index nor the ignored class (NaN: none), else n: the smallest over i is the
// first bad label.
struct InvalidClassIndex {
  AnyValues labels;
  Index classes;
  double ignored;
  Index n;
  TOWER_HD std::int64_t operator()(Index i) const {
    const double v = value_at(labels, i);
    return is_class_index(v, classes) || v == ignored ? n : i;
  }
};


// state[k] += sums[k].
template <int N>
struct AddSums {
  double* state;
  TOWER_HD void operator()(const Sums<N>& s) const {
    for (int k = 0; k < N; ++k) state[k] += s.v[k];
  }
};

// ---- metrics -------------------------------------------------------------------------------------------------

// The weight of element i of a batch of `per_example` elements per example: one weight per example or per element.
TOWER_HD double weight_at(AnyValues w, bool per_element, Index per_example, Index i) {
  if (!w.data) return 1.0;
  return value_at(w, per_element ? i : i / per_example);
}

// Over examples: {mean over the example's positions of value * weight, mean of the weights}, or {mean of the values,
// 1} without weights (MeanMetricParams).
struct MeanMetricTerm {
  MeanMetricParams p;
  AnyValues t, y, w;
  TOWER_HD double value(Index q) const {
    using Kind = MeanMetricParams::Kind;
    const Index row = q * p.classes;
    switch (p.kind) {
      case Kind::values: return value_at(y, q);
      case Kind::accuracy: return value_at(t, q) == value_at(y, q) ? 1.0 : 0.0;
      case Kind::binary_accuracy:
        return value_at(t, q) == (value_at(y, q) > p.threshold ? 1.0 : 0.0) ? 1.0 : 0.0;
      case Kind::categorical_accuracy:
        return argmax(t, row, p.classes) == argmax(y, row, p.classes) ? 1.0 : 0.0;
      case Kind::sparse_categorical_accuracy: {
        const double label = value_at(t, q);
        return is_class_index(label, p.classes) && argmax(y, row, p.classes) == static_cast<Index>(label) ? 1.0 : 0.0;
      }
      case Kind::top_k_categorical_accuracy:
        return in_top_k(y, row, p.classes, argmax(t, row, p.classes), p.k) ? 1.0 : 0.0;
      case Kind::sparse_top_k_categorical_accuracy: {
        const double label = value_at(t, q);
        return is_class_index(label, p.classes) && in_top_k(y, row, p.classes, static_cast<Index>(label), p.k)
                   ? 1.0
                   : 0.0;
      }
    }
    return 0.0;
  }
  TOWER_HD Sums<2> operator()(Index e) const {
    const Index per = p.positions / p.examples;
    double sum = 0, weight = 0;
    for (Index q = e * per; q < (e + 1) * per; ++q) {
      const double wq = w.data ? value_at(w, p.weight_per_position ? q : e) : 1.0;
      sum += value(q) * wq;
      weight += wq;
    }
    if (per == 0) return {{0.0, w.data ? 0.0 : 1.0}};
    return {{sum / static_cast<double>(per), w.data ? weight / static_cast<double>(per) : 1.0}};
  }
};

// Over elements: {tp, fp, tn, fn} weights of one decision (ThresholdCountParams).
struct ThresholdCountTerm {
  ThresholdCountParams p;
  AnyValues t, y, w;
  TOWER_HD float score(Index i) const {
    const Index r = i / p.classes, j = i - r * p.classes, begin = r * p.classes;
    const float s = static_cast<float>(value_at(y, i));
    if (p.top_k <= 0 || p.top_k >= p.classes) return s;
    // The position of j in the row sorted by descending score, equal scores in index order.
    Index rank = 0;
    for (Index m = 0; m < p.classes; ++m) {
      const float o = static_cast<float>(value_at(y, begin + m));
      if (o > s || (o == s && m < j)) ++rank;
    }
    return rank < p.top_k ? s : kNegInf;
  }
  TOWER_HD Sums<4> operator()(Index i) const {
    if (p.class_id >= 0 && i % p.classes != p.class_id) return {{0.0, 0.0, 0.0, 0.0}};
    const bool positive = value_at(t, i) != 0, predicted = score(i) > p.threshold;
    const double wi = weight_at(w, p.weight_per_element, p.rows * p.classes / p.examples, i);
    return {{positive && predicted ? wi : 0.0, !positive && predicted ? wi : 0.0,
             !positive && !predicted ? wi : 0.0, positive && !predicted ? wi : 0.0}};
  }
};

// Histograms in deterministic passes (AUC's buckets, IoU's confusion matrix): elements are taken in chunks of
// histogram_chunk(n, width); pass 1 writes each chunk's histogram of `width` bins into partial[chunk][width], pass 2
// adds the chunks of each bin in order (SumChunks). Chunks are as many as keep partial within 2^22 doubles.
TOWER_HD Index histogram_chunk(Index n, Index width) {
  const Index max_chunks = width < (Index{1} << 22) ? (Index{1} << 22) / width : 1;
  const Index spread = (n + max_chunks - 1) / max_chunks;
  return spread > 256 ? spread : 256;
}

TOWER_HD Index histogram_chunks(Index n, Index width) {
  const Index chunk = histogram_chunk(n, width);
  return (n + chunk - 1) / chunk;
}

struct SumChunks {
  const double* partial;
  Index chunks, width;
  double* histogram;
  TOWER_HD void operator()(Index b) const {
    double s = 0;
    for (Index c = 0; c < chunks; ++c) s += partial[c * width + b];
    histogram[b] = s;
  }
};

// AUC's histogram: per label, num_thresholds + 1 bins of positive weight then as many of negative weight; bin b + 1
// holds the scores of bucket b (AucParams), bin 0 those above no threshold.
TOWER_HD Index auc_labels(const AucParams& p) { return p.multi_label ? p.classes : 1; }
TOWER_HD Index auc_width(const AucParams& p) { return auc_labels(p) * 2 * (Index{p.num_thresholds} + 1); }

TOWER_HD Index auc_bucket(const AucParams& p, AnyValues y, Index i) {
  float s = static_cast<float>(value_at(y, i));
  if (p.from_logits) s = 1.f / (1.f + ::expf(-s));
  s = s < 0.f ? 0.f : (s > 1.f ? 1.f : s);
  if (p.num_thresholds == 1) return s > 0.5f ? 0 : -1;
  const Index bucket = static_cast<Index>(::ceilf(s * static_cast<float>(p.num_thresholds - 1)) - 1.f);
  return bucket >= 0 || !p.clamp_first ? bucket : 0;
}

struct AucChunkHistogram {
  AucParams p;
  AnyValues t, y, w;
  double* partial;
  TOWER_HD void operator()(Index c) const {
    const Index bins = Index{p.num_thresholds} + 1, width = auc_width(p), chunk = histogram_chunk(p.n, width);
    double* h = partial + c * width;
    for (Index b = 0; b < width; ++b) h[b] = 0;
    const Index end = (c + 1) * chunk < p.n ? (c + 1) * chunk : p.n;
    for (Index i = c * chunk; i < end; ++i) {
      const Index column = i % p.classes;
      if (p.class_id >= 0 && column != p.class_id) continue;
      double wi = weight_at(w, p.weight_per_element, p.n / p.examples, i);
      if (p.label_weights.data) wi *= value_at(p.label_weights, column);
      const Index base = (p.multi_label ? column : 0) * 2 * bins;
      h[base + (value_at(t, i) != 0 ? 0 : bins) + auc_bucket(p, y, i) + 1] += wi;
    }
  }
};

// Over thresholds i of each label: tp += the positive weight of buckets >= i, fp += the negative, tn and fn the
// rest.
struct AucAccumulate {
  const double* histogram;
  Index buckets, labels;
  double* state;
  TOWER_HD void operator()(Index j) const {
    const Index i = j % buckets;
    const double* h = histogram + (j / buckets) * 2 * (buckets + 1);
    double cum_pos = 0, cum_neg = 0, total_pos = 0, total_neg = 0;
    for (Index b = buckets; b >= 0; --b) {
      total_pos += h[b];
      total_neg += h[buckets + 1 + b];
      if (b == i + 1) {
        cum_pos = total_pos;
        cum_neg = total_neg;
      }
    }
    const Index size = buckets * labels;
    state[j] += cum_pos;
    state[size + j] += cum_neg;
    state[2 * size + j] += total_neg - cum_neg;
    state[3 * size + j] += total_pos - cum_pos;
  }
};

// Over columns: the four sums of ColumnSumsParams, added into state[k * columns + column].
struct ColumnSums {
  ColumnSumsParams p;
  AnyValues t, y, w;
  double* state;
  TOWER_HD bool decided(Index row, Index i) const {
    const float s = static_cast<float>(value_at(y, i));
    if (!p.top_of_row) return s > p.threshold;
    float top = static_cast<float>(value_at(y, row * p.columns));
    for (Index j = 1; j < p.columns; ++j) {
      const float o = static_cast<float>(value_at(y, row * p.columns + j));
      top = o > top ? o : top;
    }
    return s >= top && ::fabsf(s) > 1e-9f;
  }
  TOWER_HD void operator()(Index column) const {
    double sum[4] = {0, 0, 0, 0};
    for (Index r = 0; r < p.rows; ++r) {
      const Index i = r * p.columns + column;
      const float wi = static_cast<float>(w.data ? value_at(w, p.weight_per_element ? i : r) : 1.0);
      const float ti = static_cast<float>(value_at(t, i));
      if (p.kind == ColumnSumsParams::Kind::fbeta) {
        const float b = decided(r, i) ? 1.f : 0.f;
        sum[0] += static_cast<double>(b * ti * wi);
        sum[1] += static_cast<double>(b * (1.f - ti) * wi);
        sum[2] += static_cast<double>((1.f - b) * ti * wi);
        sum[3] += static_cast<double>(ti * wi);
      } else {
        const float d = ti - static_cast<float>(value_at(y, i));
        sum[0] += static_cast<double>(ti * wi);
        sum[1] += static_cast<double>(ti * ti * wi);
        sum[2] += static_cast<double>(d * d * wi);
        sum[3] += static_cast<double>(wi);
      }
    }
    for (int k = 0; k < 4; ++k) state[k * p.columns + column] += sum[k];
  }
};

// A position's class as an integer: the label truncated toward zero (a cast, as Keras' int64 conversion) or the
// first index of the largest of its `classes` values.
TOWER_HD std::int64_t confusion_class(AnyValues v, bool sparse, Index classes, Index q) {
  if (!sparse) return static_cast<std::int64_t>(argmax(v, q * classes, classes));
  const double label = value_at(v, q);
  return is_finite(label) && ::fabs(label) < 9.0e18 ? static_cast<std::int64_t>(label) : -1;
}

// Pass 1 of the confusion matrix (ConfusionMatrixParams) over chunks of positions.
struct ConfusionChunkHistogram {
  ConfusionMatrixParams p;
  AnyValues t, y, w;
  double* partial;
  TOWER_HD void operator()(Index c) const {
    const Index width = p.num_classes * p.num_classes, chunk = histogram_chunk(p.n, width);
    double* h = partial + c * width;
    for (Index b = 0; b < width; ++b) h[b] = 0;
    const Index end = (c + 1) * chunk < p.n ? (c + 1) * chunk : p.n;
    for (Index q = c * chunk; q < end; ++q) {
      const std::int64_t truth = confusion_class(t, p.sparse_y_true || p.binary_threshold, p.classes, q);
      const std::int64_t predicted =
          p.binary_threshold ? (static_cast<float>(value_at(y, q)) >= p.threshold ? 1 : 0)
                             : confusion_class(y, p.sparse_y_pred, p.classes, q);
      if (p.has_ignore_class && truth == p.ignore_class) continue;
      if (truth < 0 || truth >= p.num_classes || predicted < 0 || predicted >= p.num_classes) continue;
      // Keras' IoU keeps an int64 matrix: weights are truncated to whole numbers.
      const double wq = weight_at(w, p.weight_per_element, p.n / p.examples, q);
      h[truth * p.num_classes + predicted] += static_cast<double>(static_cast<std::int64_t>(wq));
    }
  }
};

struct AddDoubles {
  const double* x;
  double* y;
  TOWER_HD void operator()(Index i) const { y[i] += x[i]; }
};

struct AddToDoubles {
  double* y;
  double value;
  TOWER_HD void operator()(Index i) const { y[i] += value; }
};

// ---- the choice of functor, shared by both backends ---------------------------------------------------------------
// run(n, functor) is the backend's loop over [0, n); stats(n, term) adds up term(0) ... term(n - 1) (Sums<4>) over
// the batch and returns the four sums in device memory, valid until the functors that follow have run.

// The ignored class of a sparse loss, its kept rows counted first.
template <class Stats>
IgnoredClass ignored_class(const LossParams& lp, AnyValues t, Index rows, Stats&& stats) {
  if (lp.ignore_class != lp.ignore_class) return {};
  return {lp.ignore_class, stats(rows, KeptRow{t, lp.ignore_class}), rows};
}

inline Overlap overlap(const LossParams& lp) {
  return {lp.kind == LossKind::tversky, lp.alpha, lp.beta};
}

inline BinaryFocalTerm binary_focal(const LossParams& lp) {
  return {{lp.label_smoothing, lp.from_logits}, lp.alpha, lp.gamma, lp.apply_class_balancing};
}

inline CategoricalFocal categorical_focal(const LossParams& lp, AnyValues t, const float* p, Index cols) {
  return {t, p, cols, lp.from_logits, lp.label_smoothing, lp.alpha, lp.gamma};
}

template <class Run, class Stats>
void loss_forward(const LossParams& lp, AnyValues t, const float* p, float* out, Index rows, Index cols, Run&& run,
                  Stats&& stats) {
  const double c = static_cast<double>(cols);
  const Index n = rows * cols;
  switch (lp.kind) {
    case LossKind::mean_squared_error: return run(rows, ElementwiseLossForward<SquaredError>{{}, t, p, out, cols, c});
    case LossKind::mean_absolute_error:
      return run(rows, ElementwiseLossForward<AbsoluteError>{{}, t, p, out, cols, c});
    case LossKind::huber: return run(rows, ElementwiseLossForward<HuberTerm>{{lp.delta}, t, p, out, cols, c});
    case LossKind::kl_divergence:
      return run(rows, ElementwiseLossForward<KLDivergenceTerm>{{}, t, p, out, cols, 1.0});
    case LossKind::binary_crossentropy:
      return run(rows, ElementwiseLossForward<BinaryCrossentropyTerm>{{lp.label_smoothing, lp.from_logits}, t, p,
                                                                      out, cols, c});
    case LossKind::categorical_crossentropy:
      return run(rows, CategoricalCrossentropyForward{t, p, out, cols, lp.from_logits, lp.label_smoothing});
    case LossKind::sparse_categorical_crossentropy:
      return run(rows, SparseCrossentropyForward{t, p, out, cols, lp.from_logits, ignored_class(lp, t, rows, stats)});
    case LossKind::hinge:
    case LossKind::squared_hinge: {
      const HingeTerm term{lp.kind == LossKind::squared_hinge, stats(n, NonBinaryLabel{t})};
      return run(rows, ElementwiseLossForward<HingeTerm>{term, t, p, out, cols, c});
    }
    case LossKind::categorical_hinge: return run(rows, CategoricalHingeForward{{t, p, cols}, out});
    case LossKind::log_cosh: return run(rows, ElementwiseLossForward<LogCoshTerm>{{}, t, p, out, cols, c});
    case LossKind::poisson: return run(rows, ElementwiseLossForward<PoissonTerm>{{}, t, p, out, cols, c});
    case LossKind::mean_squared_logarithmic_error:
      return run(rows, ElementwiseLossForward<SquaredLogError>{{}, t, p, out, cols, c});
    case LossKind::mean_absolute_percentage_error:
      return run(rows, ElementwiseLossForward<AbsolutePercentageError>{{}, t, p, out, cols, c});
    case LossKind::cosine_similarity: return run(rows, CosineSimilarityForward{{t, p, cols}, out});
    case LossKind::binary_focal_crossentropy:
      return run(rows, ElementwiseLossForward<BinaryFocalTerm>{binary_focal(lp), t, p, out, cols, c});
    case LossKind::categorical_focal_crossentropy:
      return run(rows, CategoricalFocalForward{categorical_focal(lp, t, p, cols), out});
    case LossKind::dice:
    case LossKind::tversky: {
      const OverlapStats terms{overlap(lp), t, p, nullptr, cols};
      return run(rows, OverlapForward{terms, lp.over_batch ? stats(n, terms) : nullptr, out});
    }
  }
}

// run_rows for functors over rows, run_elements for functors over elements.
template <class RunRows, class RunElements, class Stats>
void loss_backward(const LossParams& lp, AnyValues t, const float* p, const float* scale, float* grad, Index rows,
                   Index cols, RunRows&& run_rows, RunElements&& run_elements, Stats&& stats) {
  const double c = static_cast<double>(cols);
  const Index n = rows * cols;
  switch (lp.kind) {
    case LossKind::mean_squared_error:
      return run_elements(n, ElementwiseLossBackward<SquaredError>{{}, t, p, scale, grad, cols, c});
    case LossKind::mean_absolute_error:
      return run_elements(n, ElementwiseLossBackward<AbsoluteError>{{}, t, p, scale, grad, cols, c});
    case LossKind::huber:
      return run_elements(n, ElementwiseLossBackward<HuberTerm>{{lp.delta}, t, p, scale, grad, cols, c});
    case LossKind::kl_divergence:
      return run_elements(n, ElementwiseLossBackward<KLDivergenceTerm>{{}, t, p, scale, grad, cols, 1.0});
    case LossKind::binary_crossentropy:
      return run_elements(n, ElementwiseLossBackward<BinaryCrossentropyTerm>{{lp.label_smoothing, lp.from_logits},
                                                                             t, p, scale, grad, cols, c});
    case LossKind::categorical_crossentropy:
      return run_rows(rows,
                      CategoricalCrossentropyBackward{t, p, scale, grad, cols, lp.from_logits, lp.label_smoothing});
    case LossKind::sparse_categorical_crossentropy:
      return run_rows(rows, SparseCrossentropyBackward{t, p, scale, grad, cols, lp.from_logits,
                                                       ignored_class(lp, t, rows, stats)});
    case LossKind::hinge:
    case LossKind::squared_hinge: {
      const HingeTerm term{lp.kind == LossKind::squared_hinge, stats(n, NonBinaryLabel{t})};
      return run_elements(n, ElementwiseLossBackward<HingeTerm>{term, t, p, scale, grad, cols, c});
    }
    case LossKind::categorical_hinge: return run_rows(rows, CategoricalHingeBackward{{t, p, cols}, scale, grad});
    case LossKind::log_cosh:
      return run_elements(n, ElementwiseLossBackward<LogCoshTerm>{{}, t, p, scale, grad, cols, c});
    case LossKind::poisson:
      return run_elements(n, ElementwiseLossBackward<PoissonTerm>{{}, t, p, scale, grad, cols, c});
    case LossKind::mean_squared_logarithmic_error:
      return run_elements(n, ElementwiseLossBackward<SquaredLogError>{{}, t, p, scale, grad, cols, c});
    case LossKind::mean_absolute_percentage_error:
      return run_elements(n, ElementwiseLossBackward<AbsolutePercentageError>{{}, t, p, scale, grad, cols, c});
    case LossKind::cosine_similarity: return run_rows(rows, CosineSimilarityBackward{{t, p, cols}, scale, grad});
    case LossKind::binary_focal_crossentropy:
      return run_elements(n, ElementwiseLossBackward<BinaryFocalTerm>{binary_focal(lp), t, p, scale, grad, cols, c});
    case LossKind::categorical_focal_crossentropy:
      return run_rows(rows, CategoricalFocalBackward{categorical_focal(lp, t, p, cols), scale, grad});
    case LossKind::dice:
    case LossKind::tversky: {
      const OverlapStats terms{overlap(lp), t, p, scale, cols};
      return run_rows(rows, OverlapBackward{terms, lp.over_batch ? stats(n, terms) : nullptr, grad});
    }
  }
}

// Returns false for a kind without a fused softmax gradient.
template <class RunRows, class Stats>
bool loss_backward_through_softmax(const LossParams& lp, AnyValues t, const float* probs, const float* scale,
                                   float* grad, Index rows, Index cols, RunRows&& run_rows, Stats&& stats) {
  if (lp.kind == LossKind::categorical_crossentropy) {
    run_rows(rows, CategoricalCrossentropySoftmaxBackward{t, probs, scale, grad, cols, lp.label_smoothing});
    return true;
  }
  if (lp.kind == LossKind::sparse_categorical_crossentropy) {
    run_rows(rows, SparseCrossentropySoftmaxBackward{t, probs, scale, grad, cols, ignored_class(lp, t, rows, stats)});
    return true;
  }
  return false;
}

}  // namespace tower::backend::math
