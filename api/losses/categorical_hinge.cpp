#include "api/losses/categorical_hinge.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

CategoricalHingeImpl::CategoricalHingeImpl(Options options)
    : BackendLoss("CategoricalHinge", options.name), options_(std::move(options)) {}

LossPtr CategoricalHingeImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<CategoricalHingeImpl>(arguments, kFixed, "CategoricalHinge");
}

Config CategoricalHingeImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
