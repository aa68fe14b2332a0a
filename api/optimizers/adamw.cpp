#include "api/optimizers/adamw.h"

namespace tower::optimizers {

namespace {

AdamOptions as_adam(const AdamWOptions& o) {
  return AdamOptions{.learning_rate = o.learning_rate,
                     .beta_1 = o.beta_1,
                     .beta_2 = o.beta_2,
                     .epsilon = o.epsilon,
                     .amsgrad = o.amsgrad,
                     .weight_decay = o.weight_decay,
                     .clipnorm = o.clipnorm,
                     .clipvalue = o.clipvalue,
                     .global_clipnorm = o.global_clipnorm};
}

}  // namespace

AdamWImpl::AdamWImpl(Options options) : AdamImpl("AdamW", as_adam(options)), options_(std::move(options)) {}

}  // namespace tower::optimizers
