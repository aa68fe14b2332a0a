#include "api/losses/hinge.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

HingeImpl::HingeImpl(Options options) : BackendLoss("Hinge", options.name), options_(std::move(options)) {}

LossPtr HingeImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<HingeImpl>(arguments, kFixed, "Hinge");
}

Config HingeImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
