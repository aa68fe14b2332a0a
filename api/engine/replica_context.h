#pragma once
// ReplicaContext: what a layer sees of the replicas a distribution strategy runs (tf.distribute's replica
// context). A plan made by a strategy hands one to every layer it runs (ForwardContext::replica,
// BackwardContext::replica); a plan without a strategy hands none (null), and a layer then behaves as the
// only replica. Layers use it to share statistics (BatchNormalization(synchronized = true)); they never learn
// how replicas are placed or how sums travel between them (threads, MPI, NCCL).
//
// During distribute::run the replica's context is also the current one of its thread (current_replica_context),
// through which Optimizer::apply_gradients called inside run sums the gradients over the replicas and updates the
// variables once per copy (TensorFlow's apply_gradients in replica context).
//
// Collectives (all_reduce_sum, merge_call): every replica of the step makes the same sequence of them, with the
// same counts; a call returns once all replicas have made it. A replica that makes another call than the others
// (another count, an all-reduce where another replica merges) ends the step with std::logic_error naming both,
// and so does one that finishes its step while another waits for it; a call throws when the step was aborted
// because another replica failed.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "api/core/device.h"

namespace tower {

struct Variable;
using VariablePtr = std::shared_ptr<Variable>;

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;
  // The replicas taking part in this step: those that got examples of the global batch (a short last batch
  // leaves some replicas without any, and they do not run). The same value on every replica of the step.
  virtual int num_replicas_in_sync() const = 0;
  // This replica's index among them, 0 to num_replicas_in_sync() - 1 (0 on the chief worker's first device).
  virtual int replica_id_in_sync_group() const = 0;
  // Replaces values[0, count) with their element-wise sum over every replica of the step.
  virtual void all_reduce_sum(double* values, std::size_t count) = 0;
  // The same for values in memory of `device`, the replica's device: on GPUs the sum is taken there, with device
  // copies and the backend's kernels (the values do not pass through the host, except between worker processes);
  // on the CPU it is the call above.
  virtual void all_reduce_sum(double* values, std::size_t count, Device device) = 0;
  // The same for float32 values (gradients), added in float32 in replica order, so every replica gets the same
  // bits.
  virtual void all_reduce_sum(float* values, std::size_t count, Device device) = 0;

  // The rest serves updates made in replica context (Optimizer::apply_gradients inside distribute::run).
  //
  // tf.distribute's merge_call: every replica of this worker's step calls it; fn runs once, on this worker's first
  // replica (local_replica_id() 0), while the others wait, and every replica returns once it has run. When fn
  // throws, its exception leaves the first replica and the step is aborted (the others throw too).
  virtual void merge_call(const std::function<void()>& fn) = 0;
  // This replica's index among this worker's replicas of the step (0 runs merge_call's function).
  virtual int local_replica_id() const = 0;
  // How this worker's replicas hold the variables they train. False: one copy for all of them (replicas on one
  // device share the model's variables; CentralStorageStrategy keeps one copy, which replicas elsewhere read
  // copies of), so an update is made once, in merge_call. True: mirrored variables, each replica trains copies of
  // its own (the first replica's are the model's) and updates them itself with the same summed gradients.
  virtual bool mirrored_variables() const = 0;
  // Replaces each variable of `variables` that is this replica's copy of one of the model's variables (mirrored
  // variables, a copy read from central storage) with the model's own; the others stay.
  virtual void to_model_variables(std::vector<VariablePtr>& variables) const = 0;
  // Mirrored variables: this replica's copies took an update from its own gradients, not summed over the
  // replicas (skip_gradients_aggregation). They now differ from the model's, and later steps of distribute::run
  // keep them instead of giving every copy the model's values again.
  virtual void own_copies_diverged() = 0;
};

// The ReplicaContext of the distribute::run step this thread runs (tf.distribute.get_replica_context() inside
// strategy.run), or null: outside run, and in fit's own steps.
ReplicaContext* current_replica_context();

// Makes `context` the current one of this thread for the object's lifetime (distribute::run's replica threads),
// then restores the one before.
class ReplicaContextScope {
 public:
  explicit ReplicaContextScope(ReplicaContext* context);
  ~ReplicaContextScope();
  ReplicaContextScope(const ReplicaContextScope&) = delete;
  ReplicaContextScope& operator=(const ReplicaContextScope&) = delete;

 private:
  ReplicaContext* previous_;
};

}  // namespace tower
