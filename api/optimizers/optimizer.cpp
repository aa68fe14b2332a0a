#include "api/optimizers/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include "api/backend/backend.h"
#include "api/optimizers/optimizers.h"

namespace tower::optimizers {

namespace {

std::string number(double v) { return Config(v).to_json(); }

// The clipping the options ask for, if any (the constructor allows at most one).
std::optional<backend::GradientClip> gradient_clip(const BaseOptions& base) {
  if (base.clipnorm) return backend::GradientClip{backend::ClipKind::norm, *base.clipnorm};
  if (base.global_clipnorm) return backend::GradientClip{backend::ClipKind::global_norm, *base.global_clipnorm};
  if (base.clipvalue) return backend::GradientClip{backend::ClipKind::value, *base.clipvalue};
  return std::nullopt;
}

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
      built_for_.push_back(&v);
      slots_by_variable_.emplace_back();
      build_slots(v);
      if (slots_by_variable_.back().size() > backend::UpdateTensors{}.slots.size())
        throw std::logic_error(type_ + ": more slots per variable than Backend::apply_update takes");
      if (clipping) clipped_.emplace_back(v.value.shape(), DType::float32, v.value.device());
    }
    if ((base_.clipnorm || base_.global_clipnorm) && !variables.empty())
      clip_scratch_ = Tensor(Shape{backend::clip_scratch_floats(static_cast<Index>(variables.size()))},
                             DType::float32, variables[0]->value.device());
  } catch (...) {
    // Leave the optimizer unbuilt, so a corrected call starts from scratch.
    built_for_.clear();
    index_by_variable_.clear();
    slots_.clear();
    slots_by_variable_.clear();
    clipped_.clear();
    clip_scratch_ = Tensor();
    throw;
  }
  call_index_.resize(variables.size());
  effective_.resize(variables.size());
  last_call_.assign(variables.size(), 0);
  clip_list_.reserve(variables.size());
  update_list_.reserve(variables.size());
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

Device Optimizer::device_of(const std::vector<VariablePtr>& variables) const {
  const Device device = variables.front()->value.device();
  for (const VariablePtr& v : variables)
    if (!(v->value.device() == device))
      throw std::invalid_argument(type_ + ".apply_gradients: variable '" + v->path + "' is on " +
                                  v->value.device().to_string() + " but '" + variables.front()->path + "' on " +
                                  device.to_string() + "; one step updates the variables of one device");
  return device;
}

void Optimizer::place_scratch(Device device) {
  if (!scalars_.defined() || !(scalars_.device() == device))
    scalars_ = Tensor(Shape{static_cast<Index>(backend::kUpdateScalarsBytes / 8)}, DType::int64, device);
  for (Tensor& t : clipped_)
    if (!(t.device() == device)) t = Tensor(t.shape(), DType::float32, device);
  if (clip_scratch_.defined() && !(clip_scratch_.device() == device))
    clip_scratch_ = Tensor(clip_scratch_.shape(), DType::float32, device);
}

void Optimizer::clip_gradients(const std::vector<Tensor>& gradients, Device device) {
  for (std::size_t k = 0; k < gradients.size(); ++k) effective_[k] = gradients[k].defined() ? &gradients[k] : nullptr;
  const std::optional<backend::GradientClip> clip = gradient_clip(base_);
  if (!clip) return;
  clip_list_.clear();
  for (std::size_t k = 0; k < gradients.size(); ++k) {
    if (!effective_[k]) continue;
    Tensor& out = clipped_[call_index_[k]];
    clip_list_.push_back({effective_[k]->data<float>(), out.data<float>(), out.numel()});
    effective_[k] = &out;
  }
  float* scratch = clip_scratch_.defined() ? clip_scratch_.data<float>() : nullptr;
  backend::get(device).clip_gradients(*clip, clip_list_, scratch);
}

void Optimizer::update_variables(const std::vector<VariablePtr>& variables, Device device) {
  update_list_.clear();
  for (std::size_t k = 0; k < variables.size(); ++k) {
    if (!effective_[k]) continue;
    backend::UpdateTensors t;
    t.variable = variables[k]->value.data<float>();
    t.gradient = effective_[k]->data<float>();
    t.n = variables[k]->value.numel();
    const auto& slots = slots_by_variable_[call_index_[k]];
    for (std::size_t j = 0; j < slots.size(); ++j) {
      Tensor& slot = slots[j].second->value;
      if (!(slot.device() == device))
        throw std::invalid_argument(type_ + ".apply_gradients: slot '" + slots[j].second->path + "' is on " +
                                    slot.device().to_string() + " but its variable on " + device.to_string() +
                                    "; move the slots (variables()) with the variables, as Model::to does");
      t.slots[j] = slot.data<float>();
    }
    update_list_.push_back(t);
  }
  backend::get(device).apply_update(prepared_update_, update_list_);
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, VariablePtr>>& grads_and_vars) {
  std::vector<VariablePtr> variables;
  std::vector<Tensor> gradients;
  variables.reserve(grads_and_vars.size());
  gradients.reserve(grads_and_vars.size());
  for (const auto& [gradient, variable] : grads_and_vars) {
    gradients.push_back(gradient);
    variables.push_back(variable);
  }
  apply_gradients(variables, gradients);
}

std::vector<std::pair<Tensor, VariablePtr>> zip(const std::vector<Tensor>& gradients,
                                                const std::vector<VariablePtr>& variables) {
  if (gradients.size() != variables.size())
    throw std::invalid_argument("optimizers::zip: " + std::to_string(gradients.size()) + " gradients for " +
                                std::to_string(variables.size()) + " variables");
  std::vector<std::pair<Tensor, VariablePtr>> pairs;
  pairs.reserve(gradients.size());
  for (std::size_t k = 0; k < gradients.size(); ++k) pairs.emplace_back(gradients[k], variables[k]);
  return pairs;
}

void Optimizer::prepare_step(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients) {
  check_gradients(variables, gradients);
  build(variables);
  if (call_index_.size() < variables.size()) {
    call_index_.resize(variables.size());
    effective_.resize(variables.size());
  }
  ++calls_;
  for (std::size_t k = 0; k < variables.size(); ++k) {
    call_index_[k] = index_of(variables[k].get(), k);
    // Each variable once, so the per-variable scratch is never asked for twice in a step.
    if (std::exchange(last_call_[call_index_[k]], calls_) == calls_)
      throw std::invalid_argument(type_ + ".apply_gradients: variable '" + variables[k]->path + "' is listed twice");
  }

  const Device device = device_of(variables);
  place_scratch(device);
  const double lr = learning_rate();
  backend::OptimizerUpdate update{update_for(lr)};
  if (base_.weight_decay) update.weight_decay = static_cast<float>(*base_.weight_decay * lr);
  // The scalars go to the device in one copy, queued before the step's work; the update reads them there.
  if (!scalars_host_.defined())
    scalars_host_ = Tensor(Shape{static_cast<Index>(backend::kUpdateScalarsBytes / 8)}, DType::int64);
  backend::write_update_scalars(update, scalars_host_.raw_data());
  scalars_.copy_from(scalars_host_);
  update.scalars = scalars_.raw_data();
  prepared_update_ = update;
  prepared_variables_ = &variables;
  prepared_gradients_ = &gradients;
  prepared_device_ = device;
  prepared_ = true;
  ran_ = false;
}

void Optimizer::require_prepared(const char* what) const {
  if (!prepared_)
    throw std::logic_error(type_ + "." + what + ": no prepared step (call prepare_step first)");
}

void Optimizer::run_step() {
  require_prepared("run_step");
  clip_gradients(*prepared_gradients_, prepared_device_);
  update_variables(*prepared_variables_, prepared_device_);
  ran_ = true;
}

void Optimizer::finish_step() {
  require_prepared("finish_step");
  if (!ran_) throw std::logic_error(type_ + ".finish_step: the prepared step has not run (call run_step first)");
  prepared_ = false;
  prepared_variables_ = nullptr;
  prepared_gradients_ = nullptr;
  ++iterations_;
}

void Optimizer::append_step_fingerprint(std::vector<std::uintptr_t>& fingerprint) const {
  const auto add = [&](const Tensor& t) {
    fingerprint.push_back(reinterpret_cast<std::uintptr_t>(t.defined() ? t.raw_data() : nullptr));
  };
  for (const VariablePtr& slot : slots_) add(slot->value);
  for (const Tensor& t : clipped_) add(t);
  add(clip_scratch_);
  add(scalars_);
  fingerprint.push_back(prepared_update_.step.index() * 2 + (prepared_update_.weight_decay != 0.f ? 1 : 0));
}

void Optimizer::apply_gradients(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients) {
  prepare_step(variables, gradients);
  run_step();
  finish_step();
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
