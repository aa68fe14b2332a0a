#include "api/losses/mean_squared_logarithmic_error.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

MeanSquaredLogarithmicErrorImpl::MeanSquaredLogarithmicErrorImpl(Options options)
    : BackendLoss("MeanSquaredLogarithmicError", options.name), options_(std::move(options)) {}

LossPtr MeanSquaredLogarithmicErrorImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<MeanSquaredLogarithmicErrorImpl>(arguments, kFixed, "MeanSquaredLogarithmicError");
}

Config MeanSquaredLogarithmicErrorImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
