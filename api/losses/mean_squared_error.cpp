#include "api/losses/mean_squared_error.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

MeanSquaredErrorImpl::MeanSquaredErrorImpl(Options options)
    : BackendLoss("MeanSquaredError", options.name), options_(std::move(options)) {}

LossPtr MeanSquaredErrorImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<MeanSquaredErrorImpl>(arguments, kFixed, "MeanSquaredError");
}

Config MeanSquaredErrorImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
