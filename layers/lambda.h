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

class LambdaImpl final : public CustomLayer {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  LambdaImpl(Function function, std::string name);
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  Config get_config() const override;

 private:
  Function function_;
};

class Lambda {
 public:
  explicit Lambda(LambdaImpl::Function function, std::string name = "")
      : impl_(std::make_shared<LambdaImpl>(std::move(function), std::move(name))) {}
  SymbolicTensor operator()(const SymbolicTensor& x) const { return (*impl_)(x); }
  LambdaImpl* operator->() const { return impl_.get(); }
  operator LayerPtr() const { return impl_; }

 private:
  std::shared_ptr<LambdaImpl> impl_;
};

}  // namespace tower::layers
