#pragma once
// Optimizer: Keras 3's base optimizer. apply_gradients(variables, gradients) runs, in order:
//   1. gradient clipping (at most one of the three may be set, as in Keras):
//        clipnorm         each gradient g becomes g * clipnorm / max(||g||, clipnorm);
//        global_clipnorm  every gradient is scaled by global_clipnorm / max(N, global_clipnorm), N the L2 norm
//                         of all gradients together;
//        clipvalue        each element is clamped to [-clipvalue, clipvalue];
//      the caller's gradient tensors are never modified (clipped copies live in scratch made on the first step);
//   2. decoupled weight decay: v -= v * weight_decay * lr (when weight_decay is set);
//   3. the optimizer's own update rule for each variable, with lr = learning_rate at the current iteration
//      (2 and 3 run element by element in one pass);
//   4. with use_ema, each variable's moving average (slot "average"): average = m * average + (1 - m) * var, m =
//      ema_momentum (0 on the first step, so the average starts at the variable); every ema_overwrite_frequency
//      steps the variables are then replaced by their averages; finalize_variable_values replaces them at the end
//      of fit;
//   5. iterations += 1.
// With gradient_accumulation_steps = N, each gradient is first added to its slot "gradient_accumulator", and
// steps 1 to 3 run only on every N-th call, with the mean of the N gradients, after which the accumulators are
// zeroed (Keras' semantics: the rule's step count t, as Keras' `iterations`, counts applied steps, the learning
// rate schedule every call). exclude_from_weight_decay exempts variables by name from step 2.
// An undefined gradient means "no gradient": that variable is left alone (Keras filters None gradients).
// Slot variables (momenta, ...) and scratch are created on the first call, on the variables' device, so later
// steps allocate nothing (the scratch follows the variables when they move, as with Model::to, which moves the
// slots too). A step is a few Backend calls over all its variables, Backend::accumulate_gradients (gradient
// accumulation), Backend::clip_gradients and Backend::apply_update (weight decay, the moving average and the
// accumulators' reset folded in; a second call for the variables excluded from weight decay): it runs on the
// variables' one device and reads nothing back to the host, norms included. Which of these a step applies
// (accumulating or updating, overwriting with the averages) is a scalar in device memory, so a captured step
// replays every kind.
//
// Each optimizer is a handle named after the Keras class, over an Impl deriving from Optimizer:
//
//   optimizers::Adam(1e-3)
//   optimizers::Adam({.learning_rate = 1e-3, .beta_1 = 0.8, .clipnorm = 1.0})
//   optimizers::SGD(schedules::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 100,
//                                                .decay_rate = 0.9}))
//
// The handle converts to OptimizerPtr and reaches the Impl with ->.
//
// In replica context (TensorFlow's apply_gradients inside strategy.run): called from the function that
// distribute::run runs on each replica, with several replicas in sync, apply_gradients first sums every gradient
// over the replicas (ReplicaContext::all_reduce_sum on the replicas' devices, and over the workers), as
// TensorFlow's experimental_aggregate_gradients = True does, then applies the sum:
//   - replicas sharing one copy of the variables (CPU replicas and logical GPUs of one GPU share the model's;
//     CentralStorageStrategy keeps one): the update is made once, by the first replica while the others wait
//     (ReplicaContext::merge_call), to the model's variables (those a replica reading copies passed are mapped to
//     them), with the sum copied to the variables' device where it is elsewhere;
//   - mirrored variables (each replica trains its own copies): every replica applies the same update to its own
//     copies, the first with this optimizer, the others with a copy of it each (made from its config, on the
//     replica's device, its slots taken from this one's whenever this one has stepped without them), so the
//     copies stay equal, as fit keeps them.
// iterations() advances once per step. With ApplyOptions::skip_gradients_aggregation each replica applies its own
// gradients unsummed: with mirrored variables each copy follows its own replica's gradients (and keeps its values
// across the steps of run, Replicas::sync_before_run); with one shared copy it throws std::invalid_argument, as
// TensorFlow refuses to apply several values to one variable. Outside run, or with one replica in sync, nothing
// changes. Every replica must make the same calls: gradients for the same variables (by path and shape) in the
// same order, the same ones defined, the same option; a mismatch throws std::invalid_argument on every replica
// naming the two that differ, and a replica that makes no call while another does ends the step with
// std::logic_error (distribute::run rethrows either), never a hang.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/tensor.h"
#include "api/io/config.h"
#include "api/io/registry.h"
#include "api/engine/layer.h"
#include "api/engine/replica_context.h"
#include "api/optimizers/schedules.h"

namespace tower::optimizers {

// Options every optimizer takes (Keras' base-optimizer arguments). Each optimizer's options struct repeats
// these fields after its own, so designated initialisers reach them directly.
struct BaseOptions {
  std::optional<double> weight_decay;     // >= 0
  std::optional<double> clipnorm;         // > 0
  std::optional<double> clipvalue;        // > 0
  std::optional<double> global_clipnorm;  // > 0
  bool use_ema = false;
  double ema_momentum = 0.99;                                // in [0, 1]
  std::optional<std::int64_t> ema_overwrite_frequency;      // >= 1
  std::optional<std::int64_t> gradient_accumulation_steps;  // >= 2 (Keras refuses 1)
};

namespace detail {
// x rounded to float32. Keras casts hyper-parameters to the variable's dtype before taking the powers of its
// bias corrections (beta_2^t with beta_2 = 0.999f differs from 0.999^t by 1e-5 relative in 1 - beta_2^t), so the
// powers here use the same rounded values.
inline double as_float32(double x) { return static_cast<double>(static_cast<float>(x)); }
}  // namespace detail

// The base fields of an optimizer's options struct.
template <class Options>
BaseOptions base_options_of(const Options& o) {
  return BaseOptions{o.weight_decay, o.clipnorm, o.clipvalue, o.global_clipnorm, o.use_ema, o.ema_momentum,
                     o.ema_overwrite_frequency, o.gradient_accumulation_steps};
}

// How apply_gradients treats the gradients inside distribute::run (see above).
struct ApplyOptions {
  // TensorFlow's skip_gradients_aggregation (experimental_aggregate_gradients = False): each replica's own
  // gradients, not their sum over the replicas.
  bool skip_gradients_aggregation = false;
};

class Optimizer {
 public:
  // Throws std::invalid_argument for a negative or non-finite learning rate, a negative weight_decay, a clip
  // value <= 0, more than one clipping option, ema_momentum outside [0, 1], ema_overwrite_frequency < 1 or
  // gradient_accumulation_steps < 2.
  Optimizer(std::string type, schedules::LearningRate learning_rate, BaseOptions base);
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The Keras class name ("Adam").
  const std::string& type() const { return type_; }
  // Throws std::invalid_argument when the lists differ in length, a variable is null or listed twice, a
  // gradient's shape, dtype or device differs from its variable's (naming the variable), no gradient is defined,
  // a variable was not in the first call's list (the optimizer builds its slots for exactly those), or the
  // variables, or a variable and its slots, are on different devices.
  // In replica context it sums the gradients over the replicas first (see above).
  void apply_gradients(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                       const ApplyOptions& options = {});
  // Keras' apply_gradients(zip(grads, vars)): (gradient, variable) pairs, as GradientTape::gradient returns them
  // beside its variables (optimizers::zip makes the pairs); the same steps, clipping and errors as above.
  void apply_gradients(const std::vector<std::pair<Tensor, VariablePtr>>& grads_and_vars,
                       const ApplyOptions& options = {});
  // apply_gradients in the three parts a step captured as a CUDA graph needs (fit's captured steps):
  //   prepare_step: the host's part: the checks and errors of apply_gradients, build on the first call, and this
  //                 step's learning rate and scalars (bias corrections, weight decay) written to device memory;
  //   run_step:     queues the device's part, the clipping and the update, which reads those scalars from device
  //                 memory when it runs, so a graph that captured it replays with the scalars of each later
  //                 prepare_step;
  //   finish_step:  counts the step (iterations() += 1).
  // apply_gradients is the three in order. The lists must stay alive and unchanged until run_step returns.
  // A replayed graph runs none of the host's code: after its launch, step_replayed() stands for run_step (the
  // graph holds a run_step captured after an earlier prepare_step whose fingerprint matched this one's).
  // Throws std::logic_error for run_step, step_replayed or finish_step without a prepared step, and for
  // finish_step before run_step or step_replayed.
  void prepare_step(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients);
  void run_step();
  void step_replayed();
  void finish_step();
  // Appends what a step captured after prepare_step depends on besides the variables and gradients: where the
  // slots, the clipping scratch and the scalars are, and what selects the update's code (the rule and whether it
  // decays weights). A graph stays valid while these stay the same.
  void append_step_fingerprint(std::vector<std::uintptr_t>& fingerprint) const;
  // The device memory holding the prepared step's scalars (backend::kUpdateScalarsBytes bytes; undefined before
  // the first prepare_step).
  const Tensor& step_scalars() const { return scalars_; }

  // Creates the slots and scratch for these variables (Keras' build(var_list)), as the first apply_gradients
  // does; a no-op once built. Lets a checkpoint restore slots before the first step. Throws
  // std::invalid_argument for a null or repeated variable.
  void build(const std::vector<VariablePtr>& variables);

  // The learning rate the next step will use.
  double learning_rate() const;
  // Replaces the learning rate (a schedule becomes a constant), as ReduceLROnPlateau does. Throws
  // std::invalid_argument for a negative or non-finite rate.
  void set_learning_rate(double lr);
  // The apply_gradients calls so far (Keras' `_iterations`, which checkpoints keep and schedules read).
  std::int64_t iterations() const { return iterations_; }
  void set_iterations(std::int64_t it) { iterations_ = it; }
  bool built() const { return built_; }

  // Keras' exclude_from_weight_decay(var_names=...): no weight decay for a variable whose name contains one of
  // `names`. Throws std::logic_error once the optimizer is built, as Keras does.
  void exclude_from_weight_decay(std::vector<std::string> names);
  const std::vector<std::string>& excluded_from_weight_decay() const { return exclude_from_weight_decay_; }
  // Keras' finalize_variable_values: with use_ema, each variable of `variables` this optimizer has a moving
  // average for takes that average (fit calls it at the end of training); otherwise nothing.
  void finalize_variable_values(const std::vector<VariablePtr>& variables);
  const BaseOptions& base_options() const { return base_; }

  // Slot variables for checkpoints, in a stable order (per variable, in the order the variables were first
  // given, each optimizer's slots in a fixed order), each with name and path "<variable path>/<slot>".
  const std::vector<VariablePtr>& variables() const { return slots_; }
  // Keras' get_config: {"name", "learning_rate" (a number or a schedule config), <own arguments>,
  // "weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "use_ema", "ema_momentum",
  // "ema_overwrite_frequency", "loss_scale_factor" (always null), "gradient_accumulation_steps"}.
  Config get_config() const;
  // {"class_name": type(), "config": get_config()}, what optimizer_from_config reads.
  Config serialize() const;

 protected:
  // Creates the slots for one variable (called once per variable, in order, on the first step), in the order
  // its update rule reads them (the step structs of backend/backend.h), which is also their checkpoint order.
  virtual void build_slots(const Variable& variable) { (void)variable; }
  // The rule and scalars of the coming step, the same for every variable. `lr` is the current learning rate;
  // applied_steps() is the number of completed updates (0 during the first).
  virtual backend::OptimizerStep update_for(double lr) const = 0;
  // Keras' `iterations` as the update rules read it: iterations() / gradient_accumulation_steps.
  std::int64_t applied_steps() const;
  // The optimizer's own arguments as an options config (base keys and learning_rate may be included; the
  // base class's current values replace them).
  virtual Config own_config() const = 0;

  // Adds a slot named "<variable path>/<name>" on the variable's device, filled with `initial_value`, of the
  // variable's shape or `shape`; returns its tensor.
  Tensor add_slot(const Variable& variable, const std::string& name, float initial_value = 0.f,
                  std::optional<Shape> shape = std::nullopt);
  // The slot of variable `index` named `name`.
  Tensor& slot(std::size_t index, std::string_view name);
  // Throws std::invalid_argument("<type>: argument '<name>' must be <expected>, got <value>") unless ok.
  void check_argument(bool ok, const char* name, double value, const char* expected) const;

 private:
  struct ReplicaState;
  // apply_gradients on a replica of distribute::run (context.num_replicas_in_sync() > 1).
  void apply_in_replica(ReplicaContext& context, const std::vector<VariablePtr>& variables,
                        const std::vector<Tensor>& gradients, bool aggregate);
  // Throws std::invalid_argument on every replica unless all replicas of the step made the same call.
  void check_same_call(ReplicaContext& context, const std::vector<VariablePtr>& variables,
                       const std::vector<Tensor>& gradients, bool aggregate) const;
  // The defined gradients summed over the replicas, in state.sums (undefined where the gradient is).
  void sum_over_replicas(ReplicaContext& context, ReplicaState& state, const std::vector<Tensor>& gradients);
  // One copy of the variables: the first replica's update of the model's variables.
  void update_once(ReplicaContext& context, ReplicaState& state, const std::vector<VariablePtr>& variables,
                   const std::vector<Tensor>& gradients);
  // Mirrored variables: this replica's update of its own copies.
  void update_own_copies(ReplicaContext& context, ReplicaState& state, const std::vector<VariablePtr>& variables,
                         const std::vector<Tensor>& gradients, bool aggregate);
  // The state of local replica r (made on first use; safe from the replica threads).
  ReplicaState& replica_state(int r);
  void check_gradients(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients) const;
  std::size_t index_of(const Variable* variable, std::size_t position) const;
  // The device of this call's variables; throws std::invalid_argument naming two that differ.
  Device device_of(const std::vector<VariablePtr>& variables) const;
  // Remakes the clipping scratch on `device` when the variables have moved there since it was made.
  void place_scratch(Device device);
  // Adds each gradient of this call to its accumulator, which becomes the gradient the step reads (effective_).
  void accumulate_gradients(const std::vector<Tensor>& gradients, Device device);
  // Fills effective_[k] with the gradient (or its accumulated mean, or its clipped copy) for the k-th entry.
  void clip_gradients(const std::vector<Tensor>& gradients, Device device);
  // One apply_update of the prepared update over the variables of this call that have a gradient.
  void update_variables(const std::vector<VariablePtr>& variables, Device device);
  void require_prepared(const char* what) const;

  std::string type_;
  schedules::LearningRate learning_rate_;
  BaseOptions base_;
  std::int64_t iterations_ = 0;
  bool built_ = false;
  // The variables of the first step, which the optimizer holds (as Keras' does): a variable dropped by the model
  // keeps its memory, so no new variable is made at its address and mistaken for it by index_by_variable_.
  std::vector<VariablePtr> built_for_;
  std::unordered_map<const Variable*, std::size_t> index_by_variable_;
  std::vector<VariablePtr> slots_;
  // Per variable its slots: the rule's first (rule_slots_ of them), then "average" (use_ema) and
  // "gradient_accumulator".
  std::vector<std::vector<std::pair<std::string, VariablePtr>>> slots_by_variable_;
  std::vector<std::size_t> rule_slots_;
  std::vector<bool> decays_;       // per variable, whether weight decay applies (exclude_from_weight_decay)
  std::vector<Tensor> update_scratch_;  // per variable, the rule's scratch (backend::update_scratch_floats)
  std::vector<std::string> exclude_from_weight_decay_;
  std::vector<backend::UpdateTensors> undecayed_list_;
  // Per-step scratch, sized in build so steady-state steps allocate nothing.
  std::vector<Tensor> clipped_;  // clipped gradients (only when a clipping option is set)
  Tensor clip_scratch_;          // squared norms and scales on the device (clipnorm, global_clipnorm)
  std::vector<std::size_t> call_index_;
  std::uint64_t calls_ = 0;               // apply_gradients calls so far
  std::vector<std::uint64_t> last_call_;  // per variable, the last call that listed it
  std::vector<const Tensor*> effective_;
  std::vector<backend::ClipTensors> clip_list_;
  std::vector<backend::UpdateTensors> update_list_;
  // The prepared step: its lists, device and update, whose scalars point into scalars_ (written from
  // scalars_host_ by prepare_step).
  const std::vector<VariablePtr>* prepared_variables_ = nullptr;
  const std::vector<Tensor>* prepared_gradients_ = nullptr;
  Device prepared_device_ = Device::cpu();
  backend::OptimizerUpdate prepared_update_;
  bool prepared_ = false, ran_ = false;
  Tensor scalars_host_, scalars_;
  // Per local replica of distribute::run, its scratch and, with mirrored variables, its copy of this optimizer.
  std::mutex replica_mutex_;
  std::vector<std::unique_ptr<ReplicaState>> replica_states_;
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

// (gradients[k], variables[k]) pairs, Python's zip(grads, vars). Throws std::invalid_argument when the lengths differ.
std::vector<std::pair<Tensor, VariablePtr>> zip(const std::vector<Tensor>& gradients,
                                                const std::vector<VariablePtr>& variables);

// A typed, shared handle to an optimizer: `optimizers::Adam` is an OptimizerHolder<AdamImpl>.
template <class Impl>
class OptimizerHolder {
 public:
  using Options = typename Impl::Options;
  OptimizerHolder(Options options = {}) : impl_(std::make_shared<Impl>(std::move(options))) {}
  OptimizerHolder(double learning_rate) : OptimizerHolder(with_learning_rate(learning_rate)) {}
  OptimizerHolder(schedules::SchedulePtr schedule) : OptimizerHolder(with_learning_rate(std::move(schedule))) {}
  explicit OptimizerHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator OptimizerPtr() const { return impl_; }

 private:
  static Options with_learning_rate(schedules::LearningRate learning_rate) {
    Options o;
    o.learning_rate = std::move(learning_rate);
    return o;
  }
  std::shared_ptr<Impl> impl_;
};

// The registry behind from_config and YAML: {"class_name": "Adam", "config": {...}} (Keras' serialized form,
// with "module" and "registered_name", is accepted), or a bare name ("adam", "SGD", "rmsprop", ...). Throws
// ConfigError for an unknown optimizer (listing the known ones), an unknown argument (naming the closest known
// one), or a Keras option Tower does not implement (a loss_scale_factor other than null).
OptimizerPtr optimizer_from_config(const Config& c);
// The class names optimizer_from_config knows.
std::vector<std::string> optimizer_types();
// The optimizer classes by Keras class name, with Keras' lower-case names as aliases (io/registry.h).
Registry<OptimizerPtr>& registry();

}  // namespace tower::optimizers
