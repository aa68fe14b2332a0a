#include "api/losses/mean_absolute_percentage_error.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

MeanAbsolutePercentageErrorImpl::MeanAbsolutePercentageErrorImpl(Options options)
    : BackendLoss("MeanAbsolutePercentageError", options.name), options_(std::move(options)) {}

LossPtr MeanAbsolutePercentageErrorImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<MeanAbsolutePercentageErrorImpl>(arguments, kFixed, "MeanAbsolutePercentageError");
}

Config MeanAbsolutePercentageErrorImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
