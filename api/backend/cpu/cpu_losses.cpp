// The CPU's losses, metrics and regularizer ops: the functors of math/losses.h in host loops. Per-row and
// per-element functors write only their own outputs, so they run in the threaded loops; the sums run in index
// order on one thread, so they give the same bits on every run and at every thread count.
#include <stdexcept>
#include <vector>

#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/losses.h"

namespace tower::backend::cpu {

namespace {

// f(i) for i in [0, n): each call loops over a row or an example, so the loop is threaded but not vectorised.
template <class F>
void for_each_index(Index n, const F& f) {
  parallel_ranges(n, [&](Index begin, Index end) {
    for (Index i = begin; i < end; ++i) f(i);
  });
}

const auto run_rows = [](Index n, const auto& f) { for_each_index(n, f); };
const auto run_elements = [](Index n, const auto& f) { elementwise(n, f); };

// finish(term(0) + term(1) + ... + term(n - 1)), added left to right from init.
template <class T, class Term, class Op, class Finish>
void reduce(Index n, const Term& term, Op op, T init, const Finish& finish) {
  T acc = init;
  for (Index i = 0; i < n; ++i) acc = op(acc, term(i));
  finish(acc);
}

template <int N>
math::Sums<N> zeros() {
  return math::Sums<N>{};
}

// A loss's batch statistics (math/losses.h), kept for the functors that follow.
class BatchStats {
 public:
  template <class Term>
  const double* operator()(Index n, const Term& term) {
    reduce(n, term, math::SumsPlus{}, zeros<4>(), [this](const math::Sums<4>& s) { sums_ = s; });
    return sums_.v;
  }

 private:
  math::Sums<4> sums_{};
};

}  // namespace

void CpuBackend::loss_forward(const LossParams& p, AnyValues y_true, const float* y_pred, float* per_example,
                              Index rows, Index cols) {
  BatchStats stats;
  math::loss_forward(p, y_true, y_pred, per_example, rows, cols, run_rows, stats);
}

void CpuBackend::loss_backward(const LossParams& p, AnyValues y_true, const float* y_pred, const float* scale,
                               float* grad, Index rows, Index cols) {
  BatchStats stats;
  math::loss_backward(p, y_true, y_pred, scale, grad, rows, cols, run_rows, run_elements, stats);
}

void CpuBackend::loss_backward_through_softmax(const LossParams& p, AnyValues y_true, const float* probs,
                                               const float* scale, float* grad_logits, Index rows, Index cols) {
  BatchStats stats;
  if (!math::loss_backward_through_softmax(p, y_true, probs, scale, grad_logits, rows, cols, run_rows, stats))
    throw std::logic_error("loss_backward_through_softmax: not a crossentropy on probabilities");
}

void CpuBackend::find_invalid_class(AnyValues labels, Index n, Index classes, double ignore_class,
                                    std::int64_t* first) {
  reduce(n, math::InvalidClassIndex{labels, classes, ignore_class, n}, math::IndexMin{}, std::int64_t{n},
         math::StoreIndex{first});
}

void CpuBackend::example_weights(const ExampleWeightParams& p, double* weights) {
  for_each_index(p.examples, math::ExampleWeight{p, weights});
}

void CpuBackend::loss_scale(const double* weights, Index n, Index per, double k, float* scale) {
  elementwise(n, math::LossScale{weights, per, k, scale});
}

void CpuBackend::masked_loss_weights(const double* weights, Index per, const float* mask, Index n, double* out) {
  reduce(n, math::KeptPosition{mask}, math::SumsPlus{}, zeros<1>(), math::StoreSum{out + n});
  elementwise(n, math::MaskedLossWeight{weights, per, mask, n, out});
}

void CpuBackend::masked_metric_weights(const float* weights, Index per, const float* mask, Index n, float* out) {
  elementwise(n, math::MaskedMetricWeight{weights, per, mask, out});
}

void CpuBackend::accumulate_weighted_sum(const float* x, const double* weights, Index n, Index per, double factor,
                                         double* total) {
  reduce(n, math::WeightedValue{x, weights, per}, math::SumsPlus{}, zeros<1>(), math::AddScaledSum{total, factor});
}

void CpuBackend::accumulate_penalty(const float* w, Index n, double l1, double l2, double factor, double* total) {
  reduce(n, math::PenaltyTerms{w}, math::SumsPlus{}, zeros<2>(), math::AddPenalty{total, l1, l2, factor});
}

void CpuBackend::add_penalty_gradient(const float* w, float* grad, Index n, double l1, double l2) {
  elementwise(n, math::PenaltyGradient{w, grad, static_cast<float>(l1), static_cast<float>(2 * l2)});
}

void CpuBackend::update_mean_metric(const MeanMetricParams& p, AnyValues y_true, AnyValues y_pred,
                                    AnyValues sample_weight, double* state) {
  reduce(p.examples, math::MeanMetricTerm{p, y_true, y_pred, sample_weight}, math::SumsPlus{}, zeros<2>(),
         math::AddSums<2>{state});
}

void CpuBackend::update_threshold_counts(const ThresholdCountParams& p, AnyValues y_true, AnyValues y_pred,
                                         AnyValues sample_weight, double* state) {
  reduce(p.rows * p.classes, math::ThresholdCountTerm{p, y_true, y_pred, sample_weight}, math::SumsPlus{},
         zeros<4>(), math::AddSums<4>{state});
}

void CpuBackend::update_auc(const AucParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                            double* state) {
  const Index width = math::auc_width(p), chunks = math::histogram_chunks(p.n, width);
  std::vector<double> partial(static_cast<std::size_t>(chunks * width)), histogram(static_cast<std::size_t>(width));
  for_each_index(chunks, math::AucChunkHistogram{p, y_true, y_pred, sample_weight, partial.data()});
  for_each_index(width, math::SumChunks{partial.data(), chunks, width, histogram.data()});
  for_each_index(p.num_thresholds * math::auc_labels(p),
                 math::AucAccumulate{histogram.data(), p.num_thresholds, math::auc_labels(p), state});
}

void CpuBackend::update_column_sums(const ColumnSumsParams& p, AnyValues y_true, AnyValues y_pred,
                                    AnyValues sample_weight, double* state) {
  for_each_index(p.columns, math::ColumnSums{p, y_true, y_pred, sample_weight, state});
}

void CpuBackend::update_confusion_matrix(const ConfusionMatrixParams& p, AnyValues y_true, AnyValues y_pred,
                                         AnyValues sample_weight, double* state) {
  const Index width = p.num_classes * p.num_classes, chunks = math::histogram_chunks(p.n, width);
  std::vector<double> partial(static_cast<std::size_t>(chunks * width)), histogram(static_cast<std::size_t>(width));
  for_each_index(chunks, math::ConfusionChunkHistogram{p, y_true, y_pred, sample_weight, partial.data()});
  for_each_index(width, math::SumChunks{partial.data(), chunks, width, histogram.data()});
  elementwise(width, math::AddDoubles{histogram.data(), state});
}

void CpuBackend::add_doubles(const double* x, double* y, Index n) { elementwise(n, math::AddDoubles{x, y}); }

void CpuBackend::add_to_doubles(double* y, Index n, double value) { elementwise(n, math::AddToDoubles{y, value}); }

}  // namespace tower::backend::cpu
