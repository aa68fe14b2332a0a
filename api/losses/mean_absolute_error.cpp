#include "api/losses/mean_absolute_error.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(Options options)
    : BackendLoss("MeanAbsoluteError", options.name), options_(std::move(options)) {}

LossPtr MeanAbsoluteErrorImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<MeanAbsoluteErrorImpl>(arguments, kFixed, "MeanAbsoluteError");
}

Config MeanAbsoluteErrorImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
