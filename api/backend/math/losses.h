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

// Over rows. Logits: m + log(sum_j exp(p_j - m)) - p_y with m the row's maximum; probabilities:
// log(sum_j c_j) - log(c_y), c = clip(p, 1e-7, 1 - 1e-7).
struct SparseCrossentropyForward {
  AnyValues labels;
  const float* p;
  float* per_example;
  Index cols;
  bool from_logits;
  TOWER_HD void operator()(Index r) const {
    const double label = value_at(labels, r);
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
      per_example[r] = static_cast<float>(m + ::log(sum) - row[y]);
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += clamp(row[j], kEpsilon, kOneMinusEpsilon);
      per_example[r] = static_cast<float>(::log(sum) - ::log(clamp(row[y], kEpsilon, kOneMinusEpsilon)));
    }
  }
};

// The class of row r's sparse label; -1, with the row's gradient g[0, cols) set to NaN, when the label is not a
// class index (a bad label poisons the step instead of indexing out of bounds).
TOWER_HD Index sparse_class_or_nan_row(const AnyValues& labels, Index r, Index cols, float* g) {
  const double label = value_at(labels, r);
  if (is_class_index(label, cols)) return static_cast<Index>(label);
  for (Index j = 0; j < cols; ++j) g[j] = static_cast<float>(quiet_nan());
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
  TOWER_HD void operator()(Index r) const {
    const float* row = p + r * cols;
    float* g = grad + r * cols;
    const Index y = sparse_class_or_nan_row(labels, r, cols, g);
    if (y < 0) return;
    const double sc = scale[r];
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
  TOWER_HD void operator()(Index r) const {
    const float* p = probs + r * cols;
    float* g = grad + r * cols;
    const Index y = sparse_class_or_nan_row(labels, r, cols, g);
    if (y < 0) return;
    const double sc = scale[r];
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

// i when labels[i] is not a class index, else n: the smallest over i is the first bad label.
struct InvalidClassIndex {
  AnyValues labels;
  Index classes, n;
  TOWER_HD std::int64_t operator()(Index i) const { return is_class_index(value_at(labels, i), classes) ? n : i; }
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
// run(n, functor) is the backend's loop over [0, n).

template <class Run>
void loss_forward(const LossParams& lp, AnyValues t, const float* p, float* out, Index rows, Index cols, Run&& run) {
  const double c = static_cast<double>(cols);
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
      return run(rows, SparseCrossentropyForward{t, p, out, cols, lp.from_logits});
  }
}

// run_rows for functors over rows, run_elements for functors over elements.
template <class RunRows, class RunElements>
void loss_backward(const LossParams& lp, AnyValues t, const float* p, const float* scale, float* grad, Index rows,
                   Index cols, RunRows&& run_rows, RunElements&& run_elements) {
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
      return run_rows(rows, SparseCrossentropyBackward{t, p, scale, grad, cols, lp.from_logits});
  }
}

// Returns false for a kind without a fused softmax gradient.
template <class RunRows>
bool loss_backward_through_softmax(const LossParams& lp, AnyValues t, const float* probs, const float* scale,
                                   float* grad, Index rows, Index cols, RunRows&& run_rows) {
  if (lp.kind == LossKind::categorical_crossentropy) {
    run_rows(rows, CategoricalCrossentropySoftmaxBackward{t, probs, scale, grad, cols, lp.label_smoothing});
    return true;
  }
  if (lp.kind == LossKind::sparse_categorical_crossentropy) {
    run_rows(rows, SparseCrossentropySoftmaxBackward{t, probs, scale, grad, cols});
    return true;
  }
  return false;
}

}  // namespace tower::backend::math
