#include "api/losses/poisson.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

PoissonImpl::PoissonImpl(Options options) : BackendLoss("Poisson", options.name), options_(std::move(options)) {}

LossPtr PoissonImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<PoissonImpl>(arguments, kFixed, "Poisson");
}

Config PoissonImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
