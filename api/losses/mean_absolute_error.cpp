#include "api/losses/mean_absolute_error.h"

#include <cmath>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(Options options)
    : ElementwiseLoss("MeanAbsoluteError", options.name), options_(std::move(options)) {}

LossPtr MeanAbsoluteErrorImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<MeanAbsoluteErrorImpl>(arguments, kFixed, "MeanAbsoluteError");
}

Config MeanAbsoluteErrorImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

double MeanAbsoluteErrorImpl::value(double t, double p) const {
  return std::abs(p - t);
}

double MeanAbsoluteErrorImpl::derivative(double t, double p) const { return p > t ? 1.0 : (p < t ? -1.0 : 0.0); }

}  // namespace tower::losses
