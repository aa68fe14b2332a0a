#include "api/optimizers/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"
#include "api/backend/cpu/loops.h"
#include "api/optimizers/optimizers.h"

namespace tower::optimizers {

namespace {

std::string number(double v) { return Config(v).to_json(); }

}  // namespace

Optimizer::Optimizer(std::string type, schedules::LearningRate learning_rate, BaseOptions base)
    : type_(std::move(type)), learning_rate_(std::move(learning_rate)), base_(base) {
  if (!learning_rate_.schedule()) {
    const double lr = learning_rate_.at(0);
    check_argument(std::isfinite(lr) && lr >= 0.0, "learning_rate", lr, "a finite number >= 0");
  }
  if (base_.weight_decay)
    check_argument(std::isfinite(*base_.weight_decay) && *base_.weight_decay >= 0.0, "weight_decay",
                   *base_.weight_decay, ">= 0");
  const std::pair<const char*, const std::optional<double>*> clips[] = {
      {"clipnorm", &base_.clipnorm}, {"clipvalue", &base_.clipvalue}, {"global_clipnorm", &base_.global_clipnorm}};
  int set = 0;
  for (const auto& [name, value] : clips) {
    if (!*value) continue;
    ++set;
    check_argument(**value > 0.0, name, **value, "> 0");
  }
  if (set > 1)
    throw std::invalid_argument(type_ + ": only one of clipnorm, clipvalue and global_clipnorm can be set");
}

void Optimizer::check_argument(bool ok, const char* name, double value, const char* expected) const {
  if (!ok)
    throw std::invalid_argument(type_ + ": argument '" + name + "' must be " + expected + ", got " + number(value));
}

void Optimizer::require_cpu(const Variable& variable) const {
  const Device device = variable.value.device();
  if (!device.is_cpu())
    throw std::invalid_argument(type_ + ": variable '" + variable.path + "' is on " + device.to_string() +
                                "; this optimizer updates CPU memory only (no fused device update is built)");
}

double Optimizer::learning_rate() const { return learning_rate_.at(iterations_); }

void Optimizer::set_learning_rate(double lr) {
  check_argument(std::isfinite(lr) && lr >= 0.0, "learning_rate", lr, "a finite number >= 0");
  learning_rate_ = schedules::LearningRate(lr);
}

Config Optimizer::get_config() const {
  Config c = Config::map();
  c.set("name", to_snake_case(type_));
  c.set("learning_rate", Config());
  c.set("weight_decay", Config());
  c.set("clipnorm", Config());
  c.set("global_clipnorm", Config());
  c.set("clipvalue", Config());
  const Config own = own_config();
  for (const auto& [key, value] : own.as_map()) c.set(key, value);
  c.set("learning_rate", learning_rate_.to_config());
  c.set("weight_decay", tower::detail::to_value(base_.weight_decay));
  c.set("clipnorm", tower::detail::to_value(base_.clipnorm));
  c.set("global_clipnorm", tower::detail::to_value(base_.global_clipnorm));
  c.set("clipvalue", tower::detail::to_value(base_.clipvalue));
  return c;
}

Config Optimizer::serialize() const {
  Config c = Config::map();
  c.set("class_name", type_);
  c.set("config", get_config());
  return c;
}

Tensor Optimizer::add_slot(const Variable& variable, const std::string& name, float initial_value) {
  auto s = std::make_shared<Variable>();
  s->name = (variable.path.empty() ? variable.name : variable.path) + "/" + name;
  s->path = s->name;
  s->trainable = false;
  s->value = Tensor::full(variable.value.shape(), initial_value, variable.value.device());
  slots_.push_back(s);
  slots_by_variable_.back().emplace_back(name, s);
  return s->value;
}

Tensor& Optimizer::slot(std::size_t index, std::string_view name) {
  for (auto& [n, v] : slots_by_variable_.at(index))
    if (n == name) return v->value;
  throw std::logic_error(type_ + ": no slot '" + std::string(name) + "' for variable " + std::to_string(index));
}

void Optimizer::check_gradients(const std::vector<VariablePtr>& variables,
                                const std::vector<Tensor>& gradients) const {
  const std::string who = type_ + ".apply_gradients: ";
  if (variables.size() != gradients.size())
    throw std::invalid_argument(who + std::to_string(variables.size()) + " variables but " +
                                std::to_string(gradients.size()) + " gradients");
  bool any = false;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!variables[i]) throw std::invalid_argument(who + "variable " + std::to_string(i) + " is null");
    const Variable& v = *variables[i];
    const Tensor& g = gradients[i];
    if (!v.value.defined())
      throw std::invalid_argument(who + "variable '" + v.path + "' has no value (is its layer built?)");
    if (!g.defined()) continue;
    any = true;
    if (g.shape() != v.value.shape())
      throw std::invalid_argument(who + "the gradient of variable '" + v.path + "' has shape " +
                                  g.shape().to_string() + ", expected the variable's shape " +
                                  v.value.shape().to_string());
    if (g.dtype() != DType::float32 || v.value.dtype() != DType::float32)
      throw std::invalid_argument(who + "variable '" + v.path + "' and its gradient must be float32");
    if (!(g.device() == v.value.device()))
      throw std::invalid_argument(who + "the gradient of variable '" + v.path + "' is on " +
                                  g.device().to_string() + ", the variable on " + v.value.device().to_string());
  }
  if (!any) throw std::invalid_argument(who + "no gradients provided for any variable");
}

void Optimizer::build(const std::vector<VariablePtr>& variables) {
  if (built_) return;
  const bool clipping = base_.clipnorm || base_.clipvalue || base_.global_clipnorm;
  try {
    for (std::size_t i = 0; i < variables.size(); ++i) {
      if (!variables[i]) throw std::invalid_argument(type_ + ".build: variable " + std::to_string(i) + " is null");
      const Variable& v = *variables[i];
      if (!v.value.defined())
        throw std::invalid_argument(type_ + ".build: variable '" + v.path + "' has no value (is its layer built?)");
      if (!index_by_variable_.emplace(&v, i).second)
        throw std::invalid_argument(type_ + ".apply_gradients: variable '" + v.path + "' is listed twice");
      if (base_.clipvalue) require_cpu(v);
      built_for_.push_back(&v);
      slots_by_variable_.emplace_back();
      build_slots(v);
      if (clipping) clipped_.emplace_back(v.value.shape(), DType::float32, v.value.device());
      if (base_.clipnorm || base_.global_clipnorm)
        norm_scratch_.emplace_back(Shape{1}, DType::float32, v.value.device());
    }
  } catch (...) {
    // Leave the optimizer unbuilt, so a corrected call starts from scratch.
    built_for_.clear();
    index_by_variable_.clear();
    slots_.clear();
    slots_by_variable_.clear();
    clipped_.clear();
    norm_scratch_.clear();
    throw;
  }
  call_index_.resize(variables.size());
  effective_.resize(variables.size());
  built_ = true;
}

std::size_t Optimizer::index_of(const Variable* variable, std::size_t position) const {
  if (position < built_for_.size() && built_for_[position] == variable) return position;
  const auto it = index_by_variable_.find(variable);
  if (it == index_by_variable_.end())
    throw std::invalid_argument(type_ + ".apply_gradients: variable '" + variable->path +
                                "' was not among the variables of the first step, for which this optimizer "
                                "built its state; make a new optimizer for a new set of variables");
  return it->second;
}

double Optimizer::squared_norm(std::size_t index, const Tensor& gradient) {
  const Device device = gradient.device();
  backend::Backend& be = backend::get(device);
  Tensor& squares = clipped_[index];
  be.mul(gradient.data<float>(), gradient.data<float>(), squares.data<float>(), gradient.numel());
  be.sum(squares.data<float>(), norm_scratch_[index].data<float>(), gradient.numel());
  float host = 0.f;
  copy_bytes(&host, Device::cpu(), norm_scratch_[index].raw_data(), device, sizeof(float));
  return static_cast<double>(host);
}

void Optimizer::clip_gradients(const std::vector<Tensor>& gradients) {
  const std::size_t n = gradients.size();
  for (std::size_t k = 0; k < n; ++k) effective_[k] = gradients[k].defined() ? &gradients[k] : nullptr;

  // Writes scale * g into the variable's scratch and points the step at it (scale 1 keeps g itself).
  const auto scale_into_scratch = [&](std::size_t k, double scale) {
    if (!effective_[k] || scale == 1.0) return;
    const Tensor& g = *effective_[k];
    Tensor& out = clipped_[call_index_[k]];
    backend::get(g.device()).axpby(static_cast<float>(scale), g.data<float>(), 0.f, out.data<float>(), g.numel());
    effective_[k] = &out;
  };

  if (base_.clipnorm) {
    const double c = *base_.clipnorm;
    for (std::size_t k = 0; k < n; ++k) {
      if (!effective_[k]) continue;
      const double norm = std::sqrt(squared_norm(call_index_[k], *effective_[k]));
      scale_into_scratch(k, c / std::max(norm, c));
    }
  } else if (base_.global_clipnorm) {
    const double c = *base_.global_clipnorm;
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k)
      if (effective_[k]) total += squared_norm(call_index_[k], *effective_[k]);
    const double norm = std::sqrt(total);
    // Keras: clip_norm * min(1 / norm, 1 / clip_norm), NaN when the norm is not finite.
    const double scale = std::isfinite(norm) ? c * std::min(1.0 / norm, 1.0 / c) : std::nan("");
    for (std::size_t k = 0; k < n; ++k) scale_into_scratch(k, scale);
  } else if (base_.clipvalue) {
    const float c = static_cast<float>(*base_.clipvalue);
    for (std::size_t k = 0; k < n; ++k) {
      if (!effective_[k]) continue;
      const float* g = effective_[k]->data<float>();
      Tensor& out = clipped_[call_index_[k]];
      float* y = out.data<float>();
      backend::cpu::elementwise(out.numel(), [=](Index i) { y[i] = g[i] < -c ? -c : (g[i] > c ? c : g[i]); });
      effective_[k] = &out;
    }
  }
}

void Optimizer::apply_gradients(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients) {
  check_gradients(variables, gradients);
  build(variables);
  if (call_index_.size() < variables.size()) {
    call_index_.resize(variables.size());
    effective_.resize(variables.size());
  }
  for (std::size_t k = 0; k < variables.size(); ++k) call_index_[k] = index_of(variables[k].get(), k);

  const double lr = learning_rate();
  clip_gradients(gradients);

  if (base_.weight_decay) {
    const float decay = static_cast<float>(*base_.weight_decay * lr);
    for (std::size_t k = 0; k < variables.size(); ++k) {
      if (!effective_[k] || decay == 0.f) continue;
      Tensor& v = variables[k]->value;
      backend::get(v.device()).axpby(-decay, v.data<float>(), 1.f, v.data<float>(), v.numel());
    }
  }

  for (std::size_t k = 0; k < variables.size(); ++k)
    if (effective_[k]) update_step(call_index_[k], variables[k]->value, *effective_[k], lr);
  ++iterations_;
}

namespace {

// Keras writes its whole base-optimizer config; the options Tower does not implement are accepted only at
// their "off" values, and ema_momentum (meaningless without use_ema) is ignored.
Config without_keras_extras(const Config& config, const std::string& name) {
  Config out = Config::map();
  for (const auto& [key, value] : config.as_map()) {
    if (key == "use_ema") {
      if (value.is_bool() && !value.as_bool()) continue;
      throw ConfigError(name + ": use_ema (weight averaging) is not supported by Tower");
    }
    if (key == "ema_overwrite_frequency" || key == "loss_scale_factor" || key == "gradient_accumulation_steps") {
      if (value.is_null()) continue;
      throw ConfigError(name + ": " + key + " is not supported by Tower (got " + value.to_json() + ")");
    }
    if (key == "ema_momentum") continue;
    out.set(key, value);
  }
  return out;
}

template <class Impl>
void add(Registry<OptimizerPtr>& r, const char* name, const char* alias) {
  r.add(name, [name](const Config& c) -> OptimizerPtr {
    return std::make_shared<Impl>(options_from_config<typename Impl::Options>(without_keras_extras(c, name), name, {"name"}));
  }, {alias});
}

}  // namespace

Registry<OptimizerPtr>& registry() {
  // Keras' class names, with its lower-case names ("adam", "sgd") as aliases.
  static Registry<OptimizerPtr> r("optimizer");
  static const bool populated = [] {
    add<SGDImpl>(r, "SGD", "sgd");
    add<AdamImpl>(r, "Adam", "adam");
    add<AdamWImpl>(r, "AdamW", "adamw");
    add<RMSpropImpl>(r, "RMSprop", "rmsprop");
    add<AdagradImpl>(r, "Adagrad", "adagrad");
    add<AdadeltaImpl>(r, "Adadelta", "adadelta");
    add<AdamaxImpl>(r, "Adamax", "adamax");
    add<NadamImpl>(r, "Nadam", "nadam");
    return true;
  }();
  (void)populated;
  return r;
}

std::vector<std::string> optimizer_types() { return registry().class_names(); }

OptimizerPtr optimizer_from_config(const Config& c) { return registry().from_config(c); }

}  // namespace tower::optimizers
