#include "api/losses/squared_hinge.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

SquaredHingeImpl::SquaredHingeImpl(Options options)
    : BackendLoss("SquaredHinge", options.name), options_(std::move(options)) {}

LossPtr SquaredHingeImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<SquaredHingeImpl>(arguments, kFixed, "SquaredHinge");
}

Config SquaredHingeImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
