#include "api/activations/activations.h"

#include <stdexcept>

namespace tower::activations {

using backend::ActivationKind;

Activation::Activation(std::string name) : name_(std::move(name)) {
  if (name_.empty() || name_ == "None" || name_ == "none") name_ = "linear";
  const std::string& n = name_;
  if (n == "linear") kind_ = ActivationKind::linear;
  else if (n == "relu") kind_ = ActivationKind::relu;
  else if (n == "relu6") { kind_ = ActivationKind::relu; params_.max_value = 6.f; }
  else if (n == "sigmoid") kind_ = ActivationKind::sigmoid;
  else if (n == "tanh") kind_ = ActivationKind::tanh;
  else if (n == "softmax") softmax_ = true;
  else if (n == "gelu") kind_ = ActivationKind::gelu;
  else if (n == "gelu_approximate") kind_ = ActivationKind::gelu_tanh;
  else if (n == "swish" || n == "silu") kind_ = ActivationKind::swish;
  else if (n == "elu") { kind_ = ActivationKind::elu; params_.alpha = 1.f; }
  else if (n == "leaky_relu") { kind_ = ActivationKind::leaky_relu; params_.alpha = 0.2f; }
  else if (n == "selu") kind_ = ActivationKind::selu;
  else if (n == "softplus") kind_ = ActivationKind::softplus;
  else if (n == "softsign") kind_ = ActivationKind::softsign;
  else if (n == "hard_sigmoid") kind_ = ActivationKind::hard_sigmoid;
  else if (n == "exponential") kind_ = ActivationKind::exponential;
  else
    throw std::invalid_argument("unknown activation '" + n +
                                "' (known: linear, relu, relu6, sigmoid, tanh, softmax, gelu, gelu_approximate, "
                                "swish, silu, elu, leaky_relu, selu, softplus, softsign, hard_sigmoid, exponential)");
}

bool Activation::output_suffices() const {
  if (softmax_) return true;
  switch (kind_) {
    case ActivationKind::linear:
    case ActivationKind::sigmoid:
    case ActivationKind::tanh:
    case ActivationKind::elu:
    case ActivationKind::exponential: return true;
    case ActivationKind::relu: return params_.alpha == 0.f && params_.threshold == 0.f;
    default: return false;
  }
}

void Activation::forward(const Tensor& x, Tensor& y) const {
  backend::Backend& be = backend::get(x.device());
  if (softmax_) {
    const Index axis = x.dim(-1);
    be.softmax_forward(x.data<float>(), y.data<float>(), x.numel() / axis, axis, 1);
    return;
  }
  be.activation_forward(kind_, params_, x.data<float>(), y.data<float>(), x.numel());
}

void Activation::backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) const {
  backend::Backend& be = backend::get(x.device());
  if (softmax_) {
    const Index axis = y.dim(-1);
    be.softmax_backward(y.data<float>(), dy.data<float>(), dx.data<float>(), y.numel() / axis, axis, 1);
    return;
  }
  be.activation_backward(kind_, params_, x.data<float>(), y.data<float>(), dy.data<float>(), dx.data<float>(),
                         x.numel());
}

}  // namespace tower::activations
