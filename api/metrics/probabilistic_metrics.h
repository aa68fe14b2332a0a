#pragma once
// Keras' probabilistic metrics that are a loss's mean (keras/src/metrics/probabilistic_metrics.py): Poisson and
// KLDivergence, the per-example values of the losses of the same names (tower::losses) averaged over examples
// weighted by sample_weight ([N]). Shapes as the losses take them. Lower is better.
#include "api/metrics/regression_metrics.h"

namespace tower::metrics {

struct PoissonOptions {
  std::string name = "poisson";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct KLDivergenceOptions {
  std::string name = "kl_divergence";
  template <class V> void visit(V&& v) { v("name", name); }
};

class PoissonImpl final : public detail::MetricWithOptions<PoissonImpl, PoissonOptions, detail::LossMean> {
 public:
  explicit PoissonImpl(Options options = {});
  static const char* type_name() { return "Poisson"; }
};

class Poisson : public MetricHolder<PoissonImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class KLDivergenceImpl final
    : public detail::MetricWithOptions<KLDivergenceImpl, KLDivergenceOptions, detail::LossMean> {
 public:
  explicit KLDivergenceImpl(Options options = {});
  static const char* type_name() { return "KLDivergence"; }
};

class KLDivergence : public MetricHolder<KLDivergenceImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
