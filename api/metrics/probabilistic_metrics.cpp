#include "api/metrics/probabilistic_metrics.h"

#include "api/losses/kl_divergence.h"
#include "api/losses/poisson.h"

namespace tower::metrics {

PoissonImpl::PoissonImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::Poisson({.name = name()}));
}

KLDivergenceImpl::KLDivergenceImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::KLDivergence({.name = name()}));
}

}  // namespace tower::metrics
