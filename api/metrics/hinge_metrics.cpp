#include "api/metrics/hinge_metrics.h"

#include "api/losses/categorical_hinge.h"
#include "api/losses/hinge.h"
#include "api/losses/squared_hinge.h"

namespace tower::metrics {

HingeImpl::HingeImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::Hinge({.name = name()}));
}

SquaredHingeImpl::SquaredHingeImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::SquaredHinge({.name = name()}));
}

CategoricalHingeImpl::CategoricalHingeImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::CategoricalHinge({.name = name()}));
}

}  // namespace tower::metrics
