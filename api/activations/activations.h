#pragma once
// Activation functions by Keras name, used by the Activation layer and every `activation=` argument:
// linear, relu, relu6, sigmoid, tanh, softmax, gelu, gelu_approximate, swish (= silu), elu, leaky_relu,
// selu, softplus, softsign, hard_sigmoid, exponential.
#include <string>

#include "api/backend/backend.h"
#include "api/io/registry.h"
#include "api/core/tensor.h"

namespace tower::activations {

class Activation {
 public:
  Activation() = default;  // linear
  Activation(const char* name) : Activation(std::string(name)) {}
  // A name registry() knows ("" and "None" mean linear); throws std::invalid_argument listing the known names.
  Activation(std::string name);

  const std::string& name() const { return name_; }
  bool is_linear() const { return name_ == "linear"; }
  // True when the gradient can be computed from the output alone, so a layer may apply this activation in
  // place and pass the output as both x and y to backward().
  bool output_suffices() const;
  // Every activation but softmax works element by element, as the backend's `kind()` with `params()`: ops that
  // apply it in a pass of their own (Backend::dense_product's epilogue) take those.
  bool is_elementwise() const { return !softmax_; }
  backend::ActivationKind kind() const { return kind_; }
  const backend::ActivationParams& params() const { return params_; }
  // Softmax runs over the last axis.
  void forward(const Tensor& x, Tensor& y) const;
  // x: forward input, y: forward output. dx may alias dy.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) const;

 private:
  friend Registry<Activation>& registry();
  Activation(std::string name, backend::ActivationKind kind, backend::ActivationParams params, bool softmax)
      : name_(std::move(name)), kind_(kind), params_(params), softmax_(softmax) {}

  std::string name_ = "linear";
  backend::ActivationKind kind_ = backend::ActivationKind::linear;
  backend::ActivationParams params_;
  bool softmax_ = false;
};

// The activations by Keras name (io/registry.h); Keras serializes an activation as its name alone.
Registry<Activation>& registry();

}  // namespace tower::activations
