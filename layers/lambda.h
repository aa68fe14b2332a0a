#pragma once
// Lambda (keras.layers.Lambda): a stateless function of tower::ops as a layer, differentiated like any CustomLayer.
//   auto y = layers::Lambda([](const Tensor& x) { return ops::square(x) * 0.5f; })(x);
// Its function is C++ code, which a config cannot hold: a model with a Lambda trains, predicts and saves its
// weights, but get_config (and so saving the whole model or a strategy's replicas, which rebuild the model from
// its config) throws, naming the layer: write a CustomLayer with get_config and TOWER_REGISTER_LAYER instead.
#include <functional>
#include <memory>
#include <string>

#include "api/engine/custom_layer.h"

namespace tower::layers {

class Lambda {
 public:
  explicit Lambda(std::function<Tensor(const Tensor&)> function, std::string name = "")
      : impl_(std::make_shared<FunctionLayer>("Lambda", std::move(name), 1,
                                              [f = std::move(function)](const std::vector<Tensor>& x) { return f(x[0]); })) {}
  SymbolicTensor operator()(const SymbolicTensor& x) const { return (*impl_)(x); }
  FunctionLayer* operator->() const { return impl_.get(); }
  operator LayerPtr() const { return impl_; }

 private:
  std::shared_ptr<FunctionLayer> impl_;
};

}  // namespace tower::layers
