#pragma once
// Keras' F-scores (keras/src/metrics/f_score_metrics.py) on y_true and y_pred [N, classes] (y_true one-hot or
// multi-hot, y_pred scores), weighted by sample_weight ([N]). A score is a decision b = (y_pred > threshold), or,
// without a threshold, b = (y_pred is the largest of its row and |y_pred| > 1e-9); per class, over the batches,
//   tp = sum w b t,  fp = sum w b (1 - t),  fn = sum w (1 - b) t,  support = sum w t,
//   precision = tp / (tp + fp + 1e-7),  recall = tp / (tp + fn + 1e-7),
//   F = (1 + beta^2) precision recall / (beta^2 precision + recall + 1e-7).
// average: null keeps one F per class (results(); result() then throws std::logic_error, as a compiled metric's
// log needs one number: pick an average), "micro" adds the counts of every class first, "macro" is the mean of the
// classes' F, "weighted" their mean weighted by support.
//
//   FBetaScore   beta > 0 (default 1)
//   F1Score      beta = 1
//
// The constructor throws std::invalid_argument for an unknown average, beta <= 0, or a threshold outside (0, 1];
// update_state for inputs not [N, classes] of equal shapes or classes that change between batches.
#include <optional>
#include <vector>

#include "api/metrics/metric.h"

namespace tower::metrics {

struct FBetaScoreOptions {
  std::optional<std::string> average;  // null, "micro", "macro" or "weighted"
  double beta = 1.0;
  std::optional<double> threshold;
  std::string name = "fbeta_score";
  template <class V> void visit(V&& v) {
    v("average", average);
    v("beta", beta);
    v("threshold", threshold);
    v("name", name);
  }
};

struct F1ScoreOptions {
  std::optional<std::string> average;
  std::optional<double> threshold;
  std::string name = "f1_score";
  template <class V> void visit(V&& v) {
    v("average", average);
    v("threshold", threshold);
    v("name", name);
  }
};

namespace detail {

// The per-class counts {tp, fp, fn, support} and the F-score of FBetaScore and F1Score.
class FBetaBase : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  std::vector<double> results() const override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;

 protected:
  void configure(const std::optional<std::string>& average, double beta, std::optional<double> threshold);

 private:
  std::optional<std::string> average_;
  double beta_ = 1;
  std::optional<float> threshold_;  // Keras compares in float32
  Index classes_ = 0;               // known from the first batch
  losses::detail::DeviceDoubles state_;  // [tp | fp | fn | support], classes_ each
};

}  // namespace detail

class FBetaScoreImpl final : public detail::MetricWithOptions<FBetaScoreImpl, FBetaScoreOptions, detail::FBetaBase> {
 public:
  explicit FBetaScoreImpl(Options options = {});
  static const char* type_name() { return "FBetaScore"; }
};

class F1ScoreImpl final : public detail::MetricWithOptions<F1ScoreImpl, F1ScoreOptions, detail::FBetaBase> {
 public:
  explicit F1ScoreImpl(Options options = {});
  static const char* type_name() { return "F1Score"; }
};

class FBetaScore : public MetricHolder<FBetaScoreImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class F1Score : public MetricHolder<F1ScoreImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
