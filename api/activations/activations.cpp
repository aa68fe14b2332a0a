#include "api/activations/activations.h"

#include <stdexcept>

namespace tower::activations {

using backend::ActivationKind;

Registry<Activation>& registry() {
  static Registry<Activation> r("activation");
  static const bool populated = [] {
    const auto add = [](const std::string& name, ActivationKind kind, backend::ActivationParams params = {},
                        bool softmax = false) {
      r.add(name, [=](const Config& args) {
        tower::detail::check_arguments(args, {}, "activation " + name);
        return Activation(name, kind, params, softmax);
      });
    };
    backend::ActivationParams relu6, alpha1, alpha02;
    relu6.max_value = 6.f;
    alpha1.alpha = 1.f;
    alpha02.alpha = 0.2f;
    add("linear", ActivationKind::linear);
    add("relu", ActivationKind::relu);
    add("relu6", ActivationKind::relu, relu6);
    add("sigmoid", ActivationKind::sigmoid);
    add("tanh", ActivationKind::tanh);
    add("softmax", ActivationKind::linear, {}, true);
    add("gelu", ActivationKind::gelu);
    add("gelu_approximate", ActivationKind::gelu_tanh);
    add("swish", ActivationKind::swish);
    add("silu", ActivationKind::swish);
    add("elu", ActivationKind::elu, alpha1);
    add("leaky_relu", ActivationKind::leaky_relu, alpha02);
    add("selu", ActivationKind::selu);
    add("softplus", ActivationKind::softplus);
    add("softsign", ActivationKind::softsign);
    add("hard_sigmoid", ActivationKind::hard_sigmoid);
    add("exponential", ActivationKind::exponential);
    return true;
  }();
  (void)populated;
  return r;
}

Activation::Activation(std::string name) {
  if (name.empty() || name == "None" || name == "none") name = "linear";
  *this = registry().from_name(name);
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
