#include "api/losses/log_cosh.h"

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

LogCoshImpl::LogCoshImpl(Options options) : BackendLoss("LogCosh", options.name), options_(std::move(options)) {}

LossPtr LogCoshImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<LogCoshImpl>(arguments, kFixed, "LogCosh");
}

Config LogCoshImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

}  // namespace tower::losses
