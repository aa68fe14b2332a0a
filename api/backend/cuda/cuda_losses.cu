// The GPU's losses, metrics and regularizer ops: the functors of math/losses.h, which the CPU tests run, in
// for_each kernels, and the sums through CUB's TransformReduce with the same terms (deterministic run to run; the
// order of additions differs from the CPU's, within rounding). Everything is queued on the backend's stream.
#include <stdexcept>
#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/cuda/reduce.cuh"
#include "api/backend/math/losses.h"

namespace tower::backend::cuda {

namespace {

template <int N>
math::Sums<N> zeros() {
  return math::Sums<N>{};
}

// reduce()'s finish for batch statistics: nothing, the sums stay where reduce() wrote them.
struct KeepSums {
  TOWER_HD void operator()(const math::Sums<4>&) const {}
};

// A loss's batch statistics (math/losses.h): reduce() leaves its result at the start of the workspace, where the
// loss's functors, which use no workspace, read it.
struct BatchStats {
  CudaBackend& backend;
  template <class Term>
  const double* operator()(Index n, const Term& term) const {
    reduce(backend, n, term, math::SumsPlus{}, zeros<4>(), KeepSums{}, "loss_stats");
    return static_cast<const math::Sums<4>*>(backend.workspace(sizeof(math::Sums<4>)))->v;
  }
};

}  // namespace

void CudaBackend::loss_forward(const LossParams& p, AnyValues y_true, const float* y_pred, float* per_example,
                               Index rows, Index cols) {
  const cudaStream_t s = stream();
  math::loss_forward(p, y_true, y_pred, per_example, rows, cols,
                     [s](Index n, const auto& f) { for_each(n, f, s, "loss_forward"); }, BatchStats{*this});
}

void CudaBackend::loss_backward(const LossParams& p, AnyValues y_true, const float* y_pred, const float* scale,
                                float* grad, Index rows, Index cols) {
  const cudaStream_t s = stream();
  const auto run = [s](Index n, const auto& f) { for_each(n, f, s, "loss_backward"); };
  math::loss_backward(p, y_true, y_pred, scale, grad, rows, cols, run, run, BatchStats{*this});
}

void CudaBackend::loss_backward_through_softmax(const LossParams& p, AnyValues y_true, const float* probs,
                                                const float* scale, float* grad_logits, Index rows, Index cols) {
  const cudaStream_t s = stream();
  const auto run = [s](Index n, const auto& f) { for_each(n, f, s, "loss_backward_through_softmax"); };
  if (!math::loss_backward_through_softmax(p, y_true, probs, scale, grad_logits, rows, cols, run,
                                           BatchStats{*this}))
    throw std::logic_error("loss_backward_through_softmax: not a crossentropy on probabilities");
}

void CudaBackend::find_invalid_class(AnyValues labels, Index n, Index classes, double ignore_class,
                                     std::int64_t* first) {
  reduce(*this, n, math::InvalidClassIndex{labels, classes, ignore_class, n}, math::IndexMin{}, std::int64_t{n},
         math::StoreIndex{first}, "find_invalid_class");
}

void CudaBackend::example_weights(const ExampleWeightParams& p, double* weights) {
  for_each(p.examples, math::ExampleWeight{p, weights}, stream(), "example_weights");
}

void CudaBackend::loss_scale(const double* weights, Index n, Index per, double k, float* scale) {
  for_each(n, math::LossScale{weights, per, k, scale}, stream(), "loss_scale");
}

void CudaBackend::masked_loss_weights(const double* weights, Index per, const float* mask, Index n, double* out) {
  reduce(*this, n, math::KeptPosition{mask}, math::SumsPlus{}, zeros<1>(), math::StoreSum{out + n},
         "masked_loss_weights");
  for_each(n, math::MaskedLossWeight{weights, per, mask, n, out}, stream(), "masked_loss_weights");
}

void CudaBackend::masked_metric_weights(const float* weights, Index per, const float* mask, Index n, float* out) {
  for_each(n, math::MaskedMetricWeight{weights, per, mask, out}, stream(), "masked_metric_weights");
}

void CudaBackend::accumulate_weighted_sum(const float* x, const double* weights, Index n, Index per, double factor,
                                          double* total) {
  reduce(*this, n, math::WeightedValue{x, weights, per}, math::SumsPlus{}, zeros<1>(),
         math::AddScaledSum{total, factor}, "accumulate_weighted_sum");
}

void CudaBackend::accumulate_penalty(const float* w, Index n, double l1, double l2, double factor, double* total) {
  reduce(*this, n, math::PenaltyTerms{w}, math::SumsPlus{}, zeros<2>(), math::AddPenalty{total, l1, l2, factor},
         "accumulate_penalty");
}

void CudaBackend::add_penalty_gradient(const float* w, float* grad, Index n, double l1, double l2) {
  for_each(n, math::PenaltyGradient{w, grad, static_cast<float>(l1), static_cast<float>(2 * l2)}, stream(),
           "add_penalty_gradient");
}

void CudaBackend::update_mean_metric(const MeanMetricParams& p, AnyValues y_true, AnyValues y_pred,
                                     AnyValues sample_weight, double* state) {
  reduce(*this, p.examples, math::MeanMetricTerm{p, y_true, y_pred, sample_weight}, math::SumsPlus{}, zeros<2>(),
         math::AddSums<2>{state}, "update_mean_metric");
}

void CudaBackend::update_threshold_counts(const ThresholdCountParams& p, AnyValues y_true, AnyValues y_pred,
                                          AnyValues sample_weight, double* state) {
  reduce(*this, p.rows * p.classes, math::ThresholdCountTerm{p, y_true, y_pred, sample_weight}, math::SumsPlus{},
         zeros<4>(), math::AddSums<4>{state}, "update_threshold_counts");
}

void CudaBackend::update_auc(const AucParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                             double* state) {
  const cudaStream_t s = stream();
  const Index width = math::auc_width(p), chunks = math::histogram_chunks(p.n, width);
  double* partial = static_cast<double*>(workspace(static_cast<std::size_t>((chunks + 1) * width) * sizeof(double)));
  double* histogram = partial + chunks * width;
  for_each(chunks, math::AucChunkHistogram{p, y_true, y_pred, sample_weight, partial}, s, "update_auc");
  for_each(width, math::SumChunks{partial, chunks, width, histogram}, s, "update_auc");
  for_each(p.num_thresholds * math::auc_labels(p),
           math::AucAccumulate{histogram, p.num_thresholds, math::auc_labels(p), state}, s, "update_auc");
}

void CudaBackend::update_column_sums(const ColumnSumsParams& p, AnyValues y_true, AnyValues y_pred,
                                     AnyValues sample_weight, double* state) {
  for_each(p.columns, math::ColumnSums{p, y_true, y_pred, sample_weight, state}, stream(), "update_column_sums");
}

void CudaBackend::update_confusion_matrix(const ConfusionMatrixParams& p, AnyValues y_true, AnyValues y_pred,
                                          AnyValues sample_weight, double* state) {
  const cudaStream_t s = stream();
  const Index width = p.num_classes * p.num_classes, chunks = math::histogram_chunks(p.n, width);
  double* partial = static_cast<double*>(workspace(static_cast<std::size_t>((chunks + 1) * width) * sizeof(double)));
  double* histogram = partial + chunks * width;
  for_each(chunks, math::ConfusionChunkHistogram{p, y_true, y_pred, sample_weight, partial}, s,
           "update_confusion_matrix");
  for_each(width, math::SumChunks{partial, chunks, width, histogram}, s, "update_confusion_matrix");
  for_each(width, math::AddDoubles{histogram, state}, s, "update_confusion_matrix");
}

void CudaBackend::add_doubles(const double* x, double* y, Index n) {
  for_each(n, math::AddDoubles{x, y}, stream(), "add_doubles");
}

void CudaBackend::add_to_doubles(double* y, Index n, double value) {
  for_each(n, math::AddToDoubles{y, value}, stream(), "add_to_doubles");
}

}  // namespace tower::backend::cuda
