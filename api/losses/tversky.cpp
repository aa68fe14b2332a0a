#include "api/losses/tversky.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

TverskyImpl::TverskyImpl(Options options)
    : OverlapLoss("Tversky", options.name, options.axis), options_(std::move(options)) {}

LossPtr TverskyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<TverskyImpl>(arguments, kFixed, "Tversky");
}

Config TverskyImpl::get_config() const { return detail::serialize(type(), options_to_config(options_), kFixed); }

// Keras computes with alpha and beta as float32 values.
backend::LossParams TverskyImpl::params() const {
  return {.kind = backend::LossKind::tversky,
          .alpha = static_cast<float>(options_.alpha),
          .beta = static_cast<float>(options_.beta),
          .over_batch = over_batch()};
}

}  // namespace tower::losses
