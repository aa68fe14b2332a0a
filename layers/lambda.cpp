#include "layers/lambda.h"

#include <stdexcept>

namespace tower::layers {

LambdaImpl::LambdaImpl(Function function, std::string name)
    : CustomLayer("Lambda", std::move(name)), function_(std::move(function)) {
  if (!function_) throw std::invalid_argument("Lambda: no function given");
}

std::vector<Tensor> LambdaImpl::call(const std::vector<Tensor>& inputs, bool) { return {function_(inputs[0])}; }

Config LambdaImpl::get_config() const {
  throw std::logic_error(where() + "a Lambda's C++ function cannot be written into a config (saving the model, "
                                   "rebuilding it for a strategy's replicas); write a CustomLayer with get_config "
                                   "and TOWER_REGISTER_LAYER for a layer that must be saved");
}

}  // namespace tower::layers
