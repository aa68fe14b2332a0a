#pragma once
// ReplicaContext: what a layer sees of the replicas a distribution strategy runs (tf.distribute's replica
// context). A plan made by a strategy hands one to every layer it runs (ForwardContext::replica,
// BackwardContext::replica); a plan without a strategy hands none (null), and a layer then behaves as the
// only replica. Layers use it to share statistics (BatchNormalization(synchronized = true)); they never learn
// how replicas are placed or how sums travel between them (threads, MPI, NCCL).
#include <cstddef>

#include "api/core/device.h"

namespace tower {

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;
  // The replicas taking part in this step: those that got examples of the global batch (a short last batch
  // leaves some replicas without any, and they do not run). The same value on every replica of the step.
  virtual int num_replicas_in_sync() const = 0;
  // This replica's index among them, 0 to num_replicas_in_sync() - 1 (0 on the chief worker's first device).
  virtual int replica_id_in_sync_group() const = 0;
  // Replaces values[0, count) with their element-wise sum over every replica of the step. Each of them must
  // make the same sequence of calls with the same counts (the calls pair up in order); a call returns once
  // all replicas have made it. Throws when the step was aborted because another replica failed.
  virtual void all_reduce_sum(double* values, std::size_t count) = 0;
  // The same for values in memory of `device`, the replica's device: on GPUs the sum is taken there, with device
  // copies and the backend's kernels (the values do not pass through the host, except between worker processes);
  // on the CPU it is the call above.
  virtual void all_reduce_sum(double* values, std::size_t count, Device device) = 0;
};

}  // namespace tower
