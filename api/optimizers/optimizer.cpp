#include "api/optimizers/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "api/backend/backend.h"
#include "api/optimizers/optimizers.h"

namespace tower::optimizers {

namespace {

std::string number(double v) { return Config(v).to_json(); }

// gradient_accumulation_steps, 0 when off.
std::int64_t accumulation_steps(const BaseOptions& base) {
  return base.gradient_accumulation_steps.value_or(0);
}

// The last two dimensions of a variable of rank >= 2 (Adafactor factors them), else {0, 0}.
std::pair<Index, Index> matrix_of(const Shape& shape) {
  const auto& dims = shape.dims();
  if (dims.size() < 2) return {0, 0};
  return {dims[dims.size() - 2], dims.back()};
}

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
  // As Keras: 0 turns gradient accumulation and EMA overwriting off, and ema_momentum matters only with use_ema.
  if (base_.gradient_accumulation_steps && *base_.gradient_accumulation_steps != 0)
    check_argument(*base_.gradient_accumulation_steps >= 2, "gradient_accumulation_steps",
                   static_cast<double>(*base_.gradient_accumulation_steps), "an integer >= 2");
  if (base_.use_ema) {
    check_argument(base_.ema_momentum >= 0.0 && base_.ema_momentum <= 1.0, "ema_momentum", base_.ema_momentum,
                   "in [0, 1]");
    if (base_.ema_overwrite_frequency && *base_.ema_overwrite_frequency != 0)
      check_argument(*base_.ema_overwrite_frequency >= 1, "ema_overwrite_frequency",
                     static_cast<double>(*base_.ema_overwrite_frequency), "an integer >= 1");
  }
}

std::int64_t Optimizer::applied_steps() const {
  const std::int64_t steps = accumulation_steps(base_);
  return steps > 0 ? iterations_ / steps : iterations_;
}

void Optimizer::exclude_from_weight_decay(std::vector<std::string> names) {
  if (built_)
    throw std::logic_error(type_ + ".exclude_from_weight_decay: the optimizer is built; call it before the first "
                                   "step, as Keras requires");
  exclude_from_weight_decay_ = std::move(names);
}

void Optimizer::finalize_variable_values(const std::vector<VariablePtr>& variables) {
  if (!base_.use_ema || !built_) return;
  for (const VariablePtr& v : variables) {
    const auto it = v ? index_by_variable_.find(v.get()) : index_by_variable_.end();
    if (it == index_by_variable_.end()) continue;
    v->value.copy_from(slot(it->second, "average"));
  }
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
  c.set("use_ema", Config());
  c.set("ema_momentum", Config());
  c.set("ema_overwrite_frequency", Config());
  c.set("loss_scale_factor", Config());
  c.set("gradient_accumulation_steps", Config());
  const Config own = own_config();
  for (const auto& [key, value] : own.as_map()) c.set(key, value);
  c.set("learning_rate", learning_rate_.to_config());
  c.set("weight_decay", tower::detail::to_value(base_.weight_decay));
  c.set("clipnorm", tower::detail::to_value(base_.clipnorm));
  c.set("global_clipnorm", tower::detail::to_value(base_.global_clipnorm));
  c.set("clipvalue", tower::detail::to_value(base_.clipvalue));
  c.set("use_ema", base_.use_ema);
  c.set("ema_momentum", base_.ema_momentum);
  c.set("ema_overwrite_frequency", tower::detail::to_value(base_.ema_overwrite_frequency));
  c.set("loss_scale_factor", Config());
  c.set("gradient_accumulation_steps", tower::detail::to_value(base_.gradient_accumulation_steps));
  return c;
}

Config Optimizer::serialize() const {
  Config c = Config::map();
  c.set("class_name", type_);
  c.set("config", get_config());
  return c;
}

Tensor Optimizer::add_slot(const Variable& variable, const std::string& name, float initial_value,
                           std::optional<Shape> shape) {
  auto s = std::make_shared<Variable>();
  s->name = (variable.path.empty() ? variable.name : variable.path) + "/" + name;
  s->path = s->name;
  s->trainable = false;
  s->value = Tensor::full(shape ? *shape : variable.value.shape(), initial_value, variable.value.device());
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
      built_for_.push_back(variables[i]);
      slots_by_variable_.emplace_back();
      build_slots(v);
      rule_slots_.push_back(slots_by_variable_.back().size());
      if (rule_slots_.back() > backend::UpdateTensors{}.slots.size())
        throw std::logic_error(type_ + ": more slots per variable than Backend::apply_update takes");
      if (base_.use_ema) add_slot(v, "average");
      if (accumulation_steps(base_) > 0) add_slot(v, "gradient_accumulator");
      decays_.push_back(std::none_of(exclude_from_weight_decay_.begin(), exclude_from_weight_decay_.end(),
                                     [&](const std::string& name) { return v.name.find(name) != std::string::npos; }));
      const auto [rows, cols] = matrix_of(v.value.shape());
      const Index scratch = backend::update_scratch_floats(update_for(learning_rate()), v.value.numel(), rows, cols);
      update_scratch_.push_back(scratch > 0 ? Tensor(Shape{scratch}, DType::float32, v.value.device()) : Tensor());
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
    rule_slots_.clear();
    decays_.clear();
    update_scratch_.clear();
    clipped_.clear();
    clip_scratch_ = Tensor();
    throw;
  }
  call_index_.resize(variables.size());
  effective_.resize(variables.size());
  last_call_.assign(variables.size(), 0);
  clip_list_.reserve(variables.size());
  update_list_.reserve(variables.size());
  undecayed_list_.reserve(variables.size());
  built_ = true;
}

std::size_t Optimizer::index_of(const Variable* variable, std::size_t position) const {
  if (position < built_for_.size() && built_for_[position].get() == variable) return position;
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
  for (Tensor& t : update_scratch_)
    if (t.defined() && !(t.device() == device)) t = Tensor(t.shape(), DType::float32, device);
  if (clip_scratch_.defined() && !(clip_scratch_.device() == device))
    clip_scratch_ = Tensor(clip_scratch_.shape(), DType::float32, device);
}

void Optimizer::accumulate_gradients(const std::vector<Tensor>& gradients, Device device) {
  update_list_.clear();
  for (std::size_t k = 0; k < gradients.size(); ++k) {
    if (!effective_[k]) continue;
    Tensor& accumulator = slot(call_index_[k], "gradient_accumulator");
    backend::UpdateTensors t;
    t.gradient = gradients[k].data<float>();
    t.accumulator = accumulator.data<float>();
    t.n = accumulator.numel();
    update_list_.push_back(t);
    effective_[k] = &accumulator;
  }
  backend::get(device).accumulate_gradients(prepared_update_, update_list_);
}

void Optimizer::clip_gradients(const std::vector<Tensor>& gradients, Device device) {
  for (std::size_t k = 0; k < gradients.size(); ++k) effective_[k] = gradients[k].defined() ? &gradients[k] : nullptr;
  if (accumulation_steps(base_) > 0) accumulate_gradients(gradients, device);
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
  undecayed_list_.clear();
  for (std::size_t k = 0; k < variables.size(); ++k) {
    if (!effective_[k]) continue;
    const std::size_t index = call_index_[k];
    backend::UpdateTensors t;
    t.variable = variables[k]->value.data<float>();
    t.gradient = effective_[k]->data<float>();
    t.n = variables[k]->value.numel();
    std::tie(t.rows, t.cols) = matrix_of(variables[k]->value.shape());
    if (update_scratch_[index].defined()) t.scratch = update_scratch_[index].data<float>();
    const auto& slots = slots_by_variable_[index];
    for (std::size_t j = 0; j < slots.size(); ++j) {
      Tensor& slot = slots[j].second->value;
      if (!(slot.device() == device))
        throw std::invalid_argument(type_ + ".apply_gradients: slot '" + slots[j].second->path + "' is on " +
                                    slot.device().to_string() + " but its variable on " + device.to_string() +
                                    "; move the slots (variables()) with the variables, as Model::to does");
      if (j < rule_slots_[index])
        t.slots[j] = slot.data<float>();
      else if (slots[j].first == "average")
        t.average = slot.data<float>();
      else
        t.accumulator = slot.data<float>();
    }
    (decays_[index] ? update_list_ : undecayed_list_).push_back(t);
  }
  backend::Backend& backend = backend::get(device);
  if (!update_list_.empty()) backend.apply_update(prepared_update_, update_list_);
  if (!undecayed_list_.empty()) {
    backend::OptimizerUpdate undecayed = prepared_update_;
    undecayed.weight_decay = 0.f;
    backend.apply_update(undecayed, undecayed_list_);
  }
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, VariablePtr>>& grads_and_vars,
                                const ApplyOptions& options) {
  std::vector<VariablePtr> variables;
  std::vector<Tensor> gradients;
  variables.reserve(grads_and_vars.size());
  gradients.reserve(grads_and_vars.size());
  for (const auto& [gradient, variable] : grads_and_vars) {
    gradients.push_back(gradient);
    variables.push_back(variable);
  }
  apply_gradients(variables, gradients, options);
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
  const std::int64_t steps = accumulation_steps(base_);
  if (steps > 0) {
    update.gradient_accumulation_steps = static_cast<int>(steps);
    update.apply_step = (iterations_ + 1) % steps == 0;
  }
  if (base_.use_ema) {
    // Keras' `iterations` here (applied_steps()): the average starts as the variable, and with accumulation it is
    // overwritten on every call of an overwriting step. Only the variables with a gradient in this call are
    // averaged (Keras averages every variable it was built for).
    update.use_ema = true;
    update.ema_momentum = applied_steps() != 0 ? static_cast<float>(base_.ema_momentum) : 0.f;
    const std::int64_t every = base_.ema_overwrite_frequency.value_or(0);
    update.overwrite_with_ema = every > 0 && (applied_steps() + 1) % every == 0;
  }
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

void Optimizer::step_replayed() {
  require_prepared("step_replayed");
  ran_ = true;
}

void Optimizer::finish_step() {
  require_prepared("finish_step");
  if (!ran_)
    throw std::logic_error(type_ +
                           ".finish_step: the prepared step has not run (call run_step or step_replayed first)");
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
  for (const Tensor& t : update_scratch_) add(t);
  fingerprint.push_back(prepared_update_.step.index() * 2 + (prepared_update_.weight_decay != 0.f ? 1 : 0));
  fingerprint.push_back(static_cast<std::uintptr_t>(prepared_update_.gradient_accumulation_steps) * 2 +
                        (prepared_update_.use_ema ? 1 : 0));
}

void Optimizer::apply_gradients(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                                const ApplyOptions& options) {
  if (ReplicaContext* context = current_replica_context()) {
    apply_in_replica(*context, variables, gradients, !options.skip_gradients_aggregation);
    return;
  }
  prepare_step(variables, gradients);
  run_step();
  finish_step();
}

// ---- apply_gradients in replica context ----------------------------------------------------------------------

struct Optimizer::ReplicaState {
  // The summed gradients: one flat buffer (one all-reduce), a view of it per defined gradient.
  Tensor flat;
  std::vector<Tensor> sums;
  // One copy of the variables (the first replica): the variables updated and their gradients on their device,
  // with the copies made for gradients elsewhere.
  std::vector<VariablePtr> targets;
  std::vector<Tensor> target_gradients, staged;
  // Mirrored variables (the other replicas): the optimizer of this replica's copies, and the iterations() of this
  // optimizer after the last step the two took together.
  std::shared_ptr<Optimizer> copy;
  std::int64_t in_step_with = -1;
  std::vector<VariablePtr> model_variables;
};

Optimizer::~Optimizer() = default;

Optimizer::ReplicaState& Optimizer::replica_state(int r) {
  const std::lock_guard<std::mutex> lock(replica_mutex_);
  const auto ur = static_cast<std::size_t>(r);
  if (replica_states_.size() <= ur) replica_states_.resize(ur + 1);
  if (!replica_states_[ur]) replica_states_[ur] = std::make_unique<ReplicaState>();
  return *replica_states_[ur];
}

void Optimizer::apply_in_replica(ReplicaContext& context, const std::vector<VariablePtr>& variables,
                                 const std::vector<Tensor>& gradients, bool aggregate) {
  check_gradients(variables, gradients);
  check_same_call(context, variables, gradients, aggregate);
  const bool mirrored = context.mirrored_variables();
  const int replicas = context.num_replicas_in_sync();
  if (!aggregate && !mirrored && replicas > 1)
    throw std::invalid_argument(type_ + ".apply_gradients inside distribute::run: skip_gradients_aggregation applies "
                                "each replica's own gradients to its own copies of the variables, but these " +
                                std::to_string(replicas) + " replicas share one copy (replicas on one device share the "
                                "model's variables, CentralStorageStrategy keeps one); sum the gradients (the "
                                "default), or give each replica copies of its own (MirroredStrategy's "
                                "mirror_variables)");
  ReplicaState& state = replica_state(context.local_replica_id());
  const std::vector<Tensor>* summed = &gradients;
  if (aggregate && replicas > 1) {
    sum_over_replicas(context, state, gradients);
    summed = &state.sums;
  }
  if (mirrored)
    update_own_copies(context, state, variables, *summed, aggregate);
  else
    update_once(context, state, variables, *summed);
}

namespace {

// The variables' paths and shapes, in order, and which have a gradient, as a 52-bit number (exact in a double).
double call_fingerprint(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  const auto mix = [&](std::uint64_t x) {
    h ^= x;
    h *= 1099511628211ULL;
  };
  for (std::size_t k = 0; k < variables.size(); ++k) {
    for (const char c : variables[k]->path) mix(static_cast<unsigned char>(c));
    mix(0x100);
    for (const Index d : variables[k]->value.shape().dims()) mix(static_cast<std::uint64_t>(d));
    mix(gradients[k].defined() ? 0x101 : 0x102);
  }
  return static_cast<double>(h >> 12);
}

}  // namespace

void Optimizer::check_same_call(ReplicaContext& context, const std::vector<VariablePtr>& variables,
                                const std::vector<Tensor>& gradients, bool aggregate) const {
  const int replicas = context.num_replicas_in_sync();
  if (replicas <= 1) return;
  // Each replica writes its call's description into its own slot; the sum gives every replica all of them.
  constexpr std::size_t kFields = 3;
  std::vector<double> calls(static_cast<std::size_t>(replicas) * kFields, 0.0);
  double* mine = calls.data() + static_cast<std::size_t>(context.replica_id_in_sync_group()) * kFields;
  mine[0] = static_cast<double>(variables.size());
  mine[1] = aggregate ? 1.0 : 0.0;
  mine[2] = call_fingerprint(variables, gradients);
  context.all_reduce_sum(calls.data(), calls.size());
  const double* first = calls.data();
  for (int q = 1; q < replicas; ++q) {
    const double* other = calls.data() + static_cast<std::size_t>(q) * kFields;
    std::string differs;
    if (other[0] != first[0])
      differs = "applies gradients to " + std::to_string(static_cast<long long>(other[0])) + " variables and replica 0 to " +
                std::to_string(static_cast<long long>(first[0]));
    else if (other[1] != first[1])
      differs = std::string(other[1] != 0.0 ? "sums" : "skips summing (skip_gradients_aggregation)") +
                " the gradients over the replicas and replica 0 " + (first[1] != 0.0 ? "sums them" : "does not");
    else if (other[2] != first[2])
      differs = "applies gradients to other variables than replica 0 (their paths or shapes in order, or which of "
                "them have a gradient, differ)";
    if (!differs.empty())
      throw std::invalid_argument(type_ + ".apply_gradients inside distribute::run: replica " + std::to_string(q) +
                                  " " + differs +
                                  "; every replica must apply gradients for the same variables, in the same order, "
                                  "with the same options");
  }
}

void Optimizer::sum_over_replicas(ReplicaContext& context, ReplicaState& state, const std::vector<Tensor>& gradients) {
  Index total = 0;
  std::optional<Device> device;
  for (const Tensor& g : gradients) {
    if (!g.defined()) continue;
    total += g.numel();
    if (!device) device = g.device();
  }
  bool laid_out = state.flat.defined() && state.flat.device() == *device && state.flat.numel() == std::max<Index>(total, 1) &&
                  state.sums.size() == gradients.size();
  for (std::size_t k = 0; laid_out && k < gradients.size(); ++k)
    laid_out = state.sums[k].defined() == gradients[k].defined() &&
               (!gradients[k].defined() || state.sums[k].shape() == gradients[k].shape());
  if (!laid_out) {
    state.flat = Tensor(Shape{std::max<Index>(total, 1)}, DType::float32, *device);
    state.sums.assign(gradients.size(), Tensor());
    Index offset = 0;
    for (std::size_t k = 0; k < gradients.size(); ++k) {
      if (!gradients[k].defined()) continue;
      const Index n = gradients[k].numel();
      state.sums[k] = state.flat.slice(offset, offset + n).reshape(gradients[k].shape());
      offset += n;
    }
  }
  for (std::size_t k = 0; k < gradients.size(); ++k)
    if (gradients[k].defined()) state.sums[k].copy_from(gradients[k]);
  context.all_reduce_sum(state.flat.data<float>(), static_cast<std::size_t>(total), *device);
}

void Optimizer::update_once(ReplicaContext& context, ReplicaState& state, const std::vector<VariablePtr>& variables,
                            const std::vector<Tensor>& gradients) {
  context.merge_call([&] {
    // The first replica's variables, or the model's that its copies were read from, on their device.
    state.targets = variables;
    context.to_model_variables(state.targets);
    state.target_gradients = gradients;
    state.staged.resize(gradients.size());
    for (std::size_t k = 0; k < gradients.size(); ++k) {
      const Tensor& g = gradients[k];
      const Tensor& v = state.targets[k]->value;
      if (!g.defined() || g.device() == v.device()) continue;
      Tensor& staged = state.staged[k];
      if (!staged.defined() || staged.device() != v.device() || staged.shape() != g.shape())
        staged = Tensor(g.shape(), DType::float32, v.device());
      staged.copy_from(g);
      state.target_gradients[k] = staged;
    }
    prepare_step(state.targets, state.target_gradients);
    run_step();
    finish_step();
  });
}

void Optimizer::update_own_copies(ReplicaContext& context, ReplicaState& state,
                                  const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                                  bool aggregate) {
  const int r = context.local_replica_id();
  Optimizer* optimizer = this;
  if (r > 0) {
    // Before the first replica steps this optimizer: the copy takes its step and learning rate, and its slots when
    // it has stepped without the copy (outside run, a restored checkpoint, a step this replica had no rows for).
    if (!state.copy) {
      try {
        state.copy = optimizer_from_config(serialize());
        state.copy->exclude_from_weight_decay_ = exclude_from_weight_decay_;
      } catch (const std::exception& e) {
        throw std::invalid_argument(type_ + ".apply_gradients inside distribute::run: replica " + std::to_string(r) +
                                    " updates its own copies of the variables with a copy of this optimizer, made "
                                    "from its config, and the config does not rebuild: " + e.what());
      }
    }
    Optimizer& copy = *state.copy;
    copy.set_iterations(iterations_);
    if (copy.learning_rate() != learning_rate()) copy.set_learning_rate(learning_rate());
    if (state.in_step_with != iterations_ && built_) {
      copy.build(variables);
      state.model_variables = variables;
      context.to_model_variables(state.model_variables);
      for (std::size_t k = 0; k < variables.size(); ++k) {
        const auto mine = index_by_variable_.find(state.model_variables[k].get());
        const auto theirs = copy.index_by_variable_.find(variables[k].get());
        // A variable either has not seen: its prepare_step below says so.
        if (mine == index_by_variable_.end() || theirs == copy.index_by_variable_.end()) continue;
        const auto& from = slots_by_variable_[mine->second];
        const auto& to = copy.slots_by_variable_[theirs->second];
        for (std::size_t j = 0; j < from.size() && j < to.size(); ++j) to[j].second->value.copy_from(from[j].second->value);
      }
    }
    optimizer = &copy;
  }
  // Every copy has read this optimizer before the first replica changes it.
  context.merge_call([] {});
  optimizer->prepare_step(variables, gradients);
  optimizer->run_step();
  optimizer->finish_step();
  if (r > 0) state.in_step_with = optimizer->iterations();
  if (!aggregate) context.own_copies_diverged();
}

namespace {

// Keras writes its whole base-optimizer config; loss_scale_factor, which Tower does not implement, is accepted
// only at its "off" value.
Config without_keras_extras(const Config& config, const std::string& name) {
  Config out = Config::map();
  for (const auto& [key, value] : config.as_map()) {
    if (key == "loss_scale_factor") {
      if (value.is_null()) continue;
      throw ConfigError(name + ": " + key + " is not supported by Tower (got " + value.to_json() + ")");
    }
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
    add<LionImpl>(r, "Lion", "lion");
    add<FtrlImpl>(r, "Ftrl", "ftrl");
    add<LambImpl>(r, "Lamb", "lamb");
    add<AdafactorImpl>(r, "Adafactor", "adafactor");
    return true;
  }();
  (void)populated;
  return r;
}

std::vector<std::string> optimizer_types() { return registry().class_names(); }

OptimizerPtr optimizer_from_config(const Config& c) { return registry().from_config(c); }

}  // namespace tower::optimizers
