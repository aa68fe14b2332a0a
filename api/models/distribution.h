#pragma once
// The training loop's view of a distribution strategy. distribute/ implements these interfaces (MirroredStrategy
// and friends); api/ drives them without knowing how replicas are placed or how they talk. Without a strategy
// (no scope, or the default strategy) a model has no Replicas and runs its own single plan, exactly as before
// strategies existed.
//
// A model captures the strategy whose scope is active when it is made (and again when it is compiled inside
// a scope, as Keras' compile does); fit, evaluate, predict and train_on_batch then run on that strategy's
// replicas wherever they are called.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "api/core/tensor.h"

namespace tower {

class ModelImpl;
class Plan;
struct Variable;
using VariablePtr = std::shared_ptr<Variable>;
namespace optimizers {
class Optimizer;
}

namespace detail {

// A non-owning reference to a callable void(int replica), so a step hands its per-replica work to replica
// threads without allocating.
class ReplicaWork {
 public:
  template <class F>
  explicit ReplicaWork(F& fn) : object_(&fn), call_([](void* o, int r) { (*static_cast<F*>(o))(r); }) {}
  void operator()(int replica) const { call_(object_, replica); }

 private:
  void* object_;
  void (*call_)(void*, int);
};

// A non-owning reference to a callable void(variables, gradients, optimizer): the training loop's update of one
// replica's own copies of the trainable variables (regularizer gradients added, then the optimizer's step).
class CopyUpdate {
 public:
  template <class F>
  explicit CopyUpdate(F& fn)
      : object_(&fn), call_([](void* o, const std::vector<VariablePtr>& v, const std::vector<Tensor>& g,
                               optimizers::Optimizer& opt) { (*static_cast<F*>(o))(v, g, opt); }) {}
  void operator()(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                  optimizers::Optimizer& optimizer) const {
    call_(object_, variables, gradients, optimizer);
  }

 private:
  void* object_;
  void (*call_)(void*, const std::vector<VariablePtr>&, const std::vector<Tensor>&, optimizers::Optimizer&);
};

// Training whose steps run in other processes (ParameterServerStrategy): fit hands itself to it. Every process of
// the cluster runs the same program and calls fit; what fit does there depends on the process's role.
class RemoteTraining {
 public:
  enum class Role { coordinator, worker, ps };
  // A step's logs: Keras' names ("loss", the metrics) with the step's values, and "size", its examples.
  using StepLogs = std::vector<std::pair<std::string, double>>;
  virtual ~RemoteTraining() = default;
  virtual Role role() const = 0;

  // Worker and parameter server: serves until the coordinator ends the run (end()). A worker calls `step` once
  // for every step the coordinator schedules on it, on the thread that called serve: one training step on the
  // worker's next batch (the model's replicas pull the variables before it and push the gradients after it),
  // returning its logs. A parameter server ignores `step`. Throws std::runtime_error when no request comes for
  // longer than the strategy's idle timeout (the coordinator is gone).
  virtual void serve(const std::function<StepLogs()>& step) = 0;

  // Coordinator. begin() reaches every worker and parameter server (throws std::runtime_error naming one that
  // does not answer) and sends the model's variables to the parameter servers.
  virtual void begin() = 0;
  // Queues `steps` steps; idle workers take them, one at a time each, without waiting for one another.
  virtual void schedule(std::int64_t steps) = 0;
  // Waits for the next step to finish and returns its logs. A worker that fails has its step run again by
  // another; throws std::runtime_error naming the parameter server when one fails, and when no worker is left.
  virtual StepLogs next_result() = 0;
  // Drops the queued steps that no worker has started and waits for those running.
  virtual void cancel() = 0;
  // Copies the parameter servers' values into the model's variables (throws naming a parameter server that
  // does not answer).
  virtual void pull() = 0;
  // Ends fit on every worker and parameter server still reachable.
  virtual void end() = 0;
};

// One model's replicas on this worker. Replicas are numbered 0 .. num_local() - 1 here; every worker sees the
// same global batches, and each local replica takes rows slice(n, r) of a global batch of n.
class Replicas {
 public:
  virtual ~Replicas() = default;
  virtual int num_local() const = 0;
  // Rows [begin, end) of a global batch of n that local replica r takes (tf.distribute's split: consecutive
  // chunks of ceil(n / replicas in sync), so a short batch leaves the last replicas fewer rows or none).
  virtual std::pair<Index, Index> slice(Index n, int r) const = 0;
  // Replica r's plan for `batch` >= 1 rows, made on first use and kept; remade when the model's trainable
  // weights change. Its layers see the replica through ForwardContext/BackwardContext::replica.
  virtual Plan& plan(int r, Index batch, bool training) = 0;
  // Calls work(r) for every local replica with rows in a global batch of n, in parallel, and returns when all
  // have finished; rethrows the first exception a replica threw. With reduce_gradients, work(r) must have run
  // backward on the plan plan(r, ...) returned last, and gradients() then holds the sum of every replica's
  // gradients on every worker.
  virtual void run(Index n, const ReplicaWork& work, bool reduce_gradients) = 0;
  // After run(..., true): the summed gradients, parallel to the replicas' plans' trainable_weights().
  virtual const std::vector<Tensor>& gradients() const = 0;
  // Assembles a [n, ...] tensor from per-replica pieces: parts[r] ([rows of slice(n, r), ...]) of every local
  // replica with rows is copied into `global` (allocated by the caller, [n, ...]) at its rows, and with several
  // workers the other workers' rows are received too, so every worker ends with all n rows. Parts of replicas
  // without rows are ignored.
  virtual void gather(Index n, std::span<const Tensor> parts, Tensor& global) = 0;
  // After the optimizer step: makes what the replicas of other workers hold equal (their copies of the
  // non-trainable weights, which only the first replica's batch statistics update), and the copies of replicas
  // that hold their own variables. Nothing to do for replicas that share the model's variables.
  virtual void after_update() {}

  // Mirrored variables. Replicas may hold their own copies of the model's variables (replicas on several
  // physical GPUs do); the model's own variables are then the first replica's copy, so reading the model's
  // weights (get_weights, save, evaluate without the strategy) reads the first replica's values.
  //
  // After run(..., true) and before the optimizer's step on the model's own variables: calls update(variables,
  // gradients, optimizer) once per other replica holding its own copies, with its copies of the trainable
  // weights (parallel to the model's trainable_weights()), the summed gradients on its device and its own
  // optimizer (a copy of `main`, at main's step and learning rate), so every copy takes the same step the model's
  // variables take. Nothing to do for replicas that share the model's variables.
  virtual void update_copies(const optimizers::Optimizer& main, const CopyUpdate& update) {
    (void)main;
    (void)update;
  }
  // After set_weights and load_weights, and as fit (after its callbacks' on_train_begin, which may restore a
  // checkpoint), evaluate and predict begin: the model's own variables and its optimizer's slots may have been
  // written outside the replicas; replicas holding their own copies take them again. (Variables written directly,
  // between train_on_batch calls, reach the copies at the next of these.) Nothing to do for replicas that share
  // the model's variables.
  virtual void sync_from_model() {}
  // Before each step of distribute::run: sync_from_model(), except once replicas holding their own copies have
  // updated them from their own gradients inside run (Optimizer::apply_gradients with skip_gradients_aggregation):
  // each copy then follows its own gradients, as the components of TensorFlow's mirrored variables do, and keeps
  // its values until the next sync_from_model (set_weights, load_weights, fit, evaluate, predict).
  virtual void sync_before_run() { sync_from_model(); }
  // Non-null when fit runs through other processes (see RemoteTraining).
  virtual RemoteTraining* remote() { return nullptr; }
};

// A strategy, as the model and the training loop see it.
class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual int num_replicas_in_sync() const = 0;
  // False on every worker but the first: only the chief writes checkpoints, logs and progress bars.
  virtual bool is_chief() const { return true; }
  // The model's replicas under this strategy; null when the strategy runs a model as it runs without one.
  virtual std::unique_ptr<Replicas> replicate(ModelImpl& model) = 0;
};

using DistributionPtr = std::shared_ptr<Distribution>;

// The strategy of the innermost active scope on this thread, or null outside any scope.
DistributionPtr current_distribution();
// Scopes nest per thread; a push is undone by exactly one pop, in reverse order.
void push_distribution(DistributionPtr distribution);
void pop_distribution();

}  // namespace detail
}  // namespace tower
