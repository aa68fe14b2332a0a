#include "api/losses/kl_divergence.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

KLDivergenceImpl::KLDivergenceImpl(Options options)
    : BackendLoss("KLDivergence", options.name), options_(std::move(options)) {}

LossPtr KLDivergenceImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<KLDivergenceImpl>(arguments, kFixed, "KLDivergence");
}

Config KLDivergenceImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
