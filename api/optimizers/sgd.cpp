#include "api/optimizers/sgd.h"

#include <cmath>

#include "api/backend/backend.h"

namespace tower::optimizers {

SGDImpl::SGDImpl(Options options)
    : Optimizer("SGD", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.momentum >= 0.0 && options_.momentum <= 1.0, "momentum", options_.momentum,
                 "in [0, 1]");
}

void SGDImpl::build_slots(const Variable& variable) {
  if (options_.momentum != 0.0) add_slot(variable, "momentum");
}

void SGDImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  backend::Backend& be = backend::get(variable.device());
  const Index n = variable.numel();
  float* v = variable.data<float>();
  const float* g = gradient.data<float>();
  const float neg_lr = static_cast<float>(-lr);
  if (options_.momentum == 0.0) {
    be.axpby(neg_lr, g, 1.f, v, n);
    return;
  }
  const float momentum = static_cast<float>(options_.momentum);
  float* m = slot(index, "momentum").data<float>();
  be.axpby(neg_lr, g, momentum, m, n);
  if (options_.nesterov) {
    be.axpby(momentum, m, 1.f, v, n);
    be.axpby(neg_lr, g, 1.f, v, n);
  } else {
    be.axpby(1.f, m, 1.f, v, n);
  }
}

}  // namespace tower::optimizers
