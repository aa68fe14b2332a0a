#include "api/losses/kl_divergence.h"

#include <algorithm>
#include <cmath>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};

double clip(double x) { return std::clamp(x, static_cast<double>(detail::kEpsilon), 1.0); }
}  // namespace

KLDivergenceImpl::KLDivergenceImpl(Options options)
    : ElementwiseLoss("KLDivergence", options.name), options_(std::move(options)) {}

LossPtr KLDivergenceImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<KLDivergenceImpl>(arguments, kFixed, "KLDivergence");
}

Config KLDivergenceImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

double KLDivergenceImpl::value(double t, double p) const {
  const double tc = clip(t);
  return tc * std::log(tc / clip(p));
}

double KLDivergenceImpl::derivative(double t, double p) const {
  if (p < detail::kEpsilon || p > 1.0) return 0.0;
  return -clip(t) / p;
}

}  // namespace tower::losses
