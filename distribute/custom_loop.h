#pragma once
// Custom training loops under a strategy (tf.distribute's strategy.experimental_distribute_dataset, strategy.run
// and strategy.reduce), on the replicas fit runs:
//
//   distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
//   Model model = [&] { auto scope = strategy.scope(); return make_model(); }();
//   auto opt = optimizers::SGD(0.1);
//   auto loss_fn = losses::SparseCategoricalCrossentropy();
//   auto dist = distribute::distribute_dataset(strategy, data.batch(64 * strategy.num_replicas_in_sync()));
//   auto it = dist.make_iterator();
//   while (auto batch = it.next()) {
//     auto per_replica = distribute::run(strategy, model, *batch, [&](distribute::ReplicaStep& step) {
//       GradientTape tape;
//       Tensor probs = step.call(tape, step.batch()[0]);                // this replica's rows, its plan
//       Tensor loss = tape.loss(loss_fn, step.batch()[1], probs,
//                               {.global_batch_size = step.global_batch_size()});
//       return tape.gradient(loss, step.trainable_weights());
//     });
//     std::vector<Tensor> grads = distribute::reduce(strategy, distribute::ReduceOp::SUM, per_replica);
//     opt->apply_gradients(optimizers::zip(grads, model.trainable_weights()));
//   }
//
// Gradients are taken per replica, summed across the replicas with reduce and applied once to the model's
// variables, as the classic multi-GPU tower programs do and as fit's step does: with each replica's loss divided
// by the global batch, N replicas then compute what one replica computes on the whole batch.
//
// Or, as TensorFlow's apply_gradients in replica context, inside run: there the optimizer sums the gradients over
// the replicas itself (and over the workers) and updates every copy of the variables once (optimizer.h says how):
//
//   distribute::run(strategy, model, *batch, [&](distribute::ReplicaStep& step) {
//     GradientTape tape;
//     Tensor probs = step.call(tape, step.batch()[0]);
//     Tensor loss = tape.loss(loss_fn, step.batch()[1], probs, {.global_batch_size = step.global_batch_size()});
//     const std::vector<VariablePtr>& vars = step.trainable_weights();
//     opt->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));   // summed over the replicas
//   });
//
// Every replica then makes the same apply_gradients calls; one that does not ends the step with an error.
//
// distribute_dataset: iterates the global batches of one input pipeline; run() splits each as fit splits it
// (Replicas::slice: consecutive chunks of ceil(n / replicas in sync)).
// run: calls fn once per local replica that has rows of the batch, in parallel on the replicas' threads (each
// with its device, its OpenMP threads and its ReplicaContext, as fit's steps run), and returns what each
// returned, in replica order. Model calls through ReplicaStep::call run the replica's own training plan for its
// rows. Without replicas (the default strategy, or a model made outside any scope) fn runs once on this thread
// on the model's own plan. Before fn runs, replicas holding their own copies of the variables (mirrored
// variables) take the model's values (Replicas::sync_before_run), so updates applied to the model reach them;
// once copies have followed their own gradients (skip_gradients_aggregation) they keep their values instead. fn
// runs in replica context (current_replica_context(), api/engine/replica_context.h). An exception in fn is
// rethrown after every replica has finished (a replica waiting for the failed one in a collective stops too). Throws std::invalid_argument when the model
// belongs to another strategy.
// After fn has run on every replica, the first replica's moving statistics (BatchNormalization) reach what fit's
// steps make them reach (Replicas::after_update): the central variables, the other workers, the mirrored copies.
// reduce: SUM adds the per-replica tensors on the first value's device (copying the others there); MEAN divides
// that sum by num_replicas_in_sync, as tf.distribute's Strategy.reduce(MEAN, value, axis=None) does, also when a
// short batch left replicas without rows (and so without a value: they count as zeros). Undefined tensors
// (unconnected gradients) are skipped; a position where every value is undefined stays undefined. There is no
// `axis` (TensorFlow's reduce(MEAN, value, axis=0) averages over every replica's rows instead). Throws
// std::invalid_argument for values of different shapes, lists of different lengths, no values or more values
// than replicas in sync; std::logic_error under a strategy of several workers, whose sums would need the other
// workers' values.
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "api/data/dataset.h"
#include "api/models/model.h"
#include "api/training/gradient_tape.h"
#include "distribute/strategy.h"

namespace tower::distribute {

enum class ReduceOp { SUM, MEAN };

// One value per local replica that ran (tf.distribute's PerReplica).
template <class T>
struct PerReplica {
  std::vector<T> values;
};

// A global batch of a distributed dataset (tf.distribute's distributed value of the input).
struct DistributedBatch {
  data::Element global;
  Index size() const { return global.empty() ? 0 : global[0].dim(0); }
};

class DistributedDataset {
 public:
  DistributedDataset(Strategy strategy, data::Dataset data);
  class Iterator {
   public:
    explicit Iterator(std::unique_ptr<data::Iterator> it) : it_(std::move(it)) {}
    // The next global batch, or nullopt at the end of the data.
    std::optional<DistributedBatch> next();

   private:
    std::unique_ptr<data::Iterator> it_;
  };
  Iterator make_iterator() const { return Iterator(data_.make_iterator()); }
  const Strategy& strategy() const { return strategy_; }

 private:
  Strategy strategy_;
  data::Dataset data_;
};

// strategy.experimental_distribute_dataset(data): `data` yields global batches (inputs..., targets..., ...).
DistributedDataset distribute_dataset(const Strategy& strategy, data::Dataset data);

// What fn sees on one replica (tf.distribute's ReplicaContext, with the replica's share of the batch).
class ReplicaStep {
 public:
  ReplicaStep(Plan& plan, data::Element batch, Index global_batch_size, int local_index)
      : plan_(&plan), batch_(std::move(batch)), global_batch_size_(global_batch_size), local_index_(local_index) {}
  // This replica's rows of every component of the global batch (views, in host memory when the batch is).
  const data::Element& batch() const { return batch_; }
  Index global_batch_size() const { return global_batch_size_; }
  // The replica's ReplicaContext during run() (the replicas with rows of this batch; 0 and 1 without replicas).
  int replica_id_in_sync_group() const;
  int num_replicas_in_sync() const;
  // Index among this worker's replicas (the position of this replica's value in the PerReplica run returns).
  int local_index() const { return local_index_; }
  Device device() const { return plan_->options().device; }
  // The replica's model in training mode, recorded on `tape` (GradientTape::call on the replica's plan).
  std::vector<Tensor> call(GradientTape& tape, const std::vector<Tensor>& inputs) const;
  Tensor call(GradientTape& tape, const Tensor& x) const;
  // The variables the replica's plan trains: the model's own, or this replica's copies (mirrored variables), in
  // the order of the model's trainable_weights().
  const std::vector<VariablePtr>& trainable_weights() const { return plan_->trainable_weights(); }

 private:
  Plan* plan_;
  data::Element batch_;
  Index global_batch_size_;
  int local_index_;
};

namespace detail {
// The number of values run() may return for `model` (its local replicas, or 1), and the run itself: fn(step) for
// every local replica with rows, step.local_index() telling which.
int local_replica_count(const Strategy& strategy, ModelImpl& model);
void run_replicas(const Strategy& strategy, ModelImpl& model, const DistributedBatch& batch,
                  const std::function<void(ReplicaStep&)>& fn);
}  // namespace detail

// strategy.run(fn): see above. fn(ReplicaStep&) returns a value (copied out per replica), or nothing.
template <class Fn>
auto run(const Strategy& strategy, const Model& model, const DistributedBatch& batch, Fn&& fn) {
  using R = std::invoke_result_t<Fn&, ReplicaStep&>;
  if constexpr (std::is_void_v<R>) {
    detail::run_replicas(strategy, model.impl(), batch, [&](ReplicaStep& step) { fn(step); });
  } else {
    std::vector<std::optional<R>> slots(static_cast<std::size_t>(detail::local_replica_count(strategy, model.impl())));
    detail::run_replicas(strategy, model.impl(), batch, [&](ReplicaStep& step) {
      slots[static_cast<std::size_t>(step.local_index())].emplace(fn(step));
    });
    PerReplica<R> out;
    for (auto& s : slots)
      if (s) out.values.push_back(std::move(*s));
    return out;
  }
}

// strategy.reduce(op, per_replica): see above.
Tensor reduce(const Strategy& strategy, ReduceOp op, const PerReplica<Tensor>& values);
std::vector<Tensor> reduce(const Strategy& strategy, ReduceOp op, const PerReplica<std::vector<Tensor>>& values);

}  // namespace tower::distribute
