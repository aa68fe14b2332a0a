#pragma once
// MirroredReplicas: one model's replicas under a OneDeviceStrategy, MirroredStrategy or
// MultiWorkerMirroredStrategy. Each local replica has its own plans (its rows of the batch, its activations and
// gradient buffer) over the model's one set of layers and weights, and runs on its own thread (in the calling
// thread when there is one replica). Replicas share the weights' memory: CPU replicas, and GPU replicas that are
// logical GPUs of one physical GPU (the model's weights move there), so the one optimizer update is seen by all
// at once, and only the first replica writes BatchNormalization's moving statistics. Replicas sharing a GPU take
// turns issuing work to it (TurnHold in barrier.h).
//
// A training step: every replica runs forward and backward on its rows. The gradients are grouped into buckets
// (gradient_buckets.h, bucket_cap_bytes each); as soon as a replica's backward has produced a bucket, its thread
// meets the others at a barrier and they sum that bucket of their flat gradient buffers with the strategy's
// CrossDeviceOps into one buffer, while later buckets are still being computed (a single replica's buffer is used
// as it is). With several workers that buffer is then summed over the workers (MPI), workers without rows
// contributing zeros. Plans and buffers are made on first use per batch size, so steady-state steps allocate
// nothing.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "api/models/distribution.h"
#include "api/engine/layer.h"
#include "distribute/cross_device_ops.h"
#include "distribute/detail/communicator.h"
#include "distribute/detail/gradient_buckets.h"
#include "distribute/detail/replica_group.h"
#include "distribute/detail/replica_threads.h"

namespace tower::distribute::detail {

class MirroredReplicas final : public tower::detail::Replicas {
 public:
  // Replicas of `model` on `devices` (CPU devices, or GPUs all on one physical GPU), reduced by `ops` in buckets
  // of bucket_cap_bytes; with `workers`, the same number of replicas on every worker. Throws
  // std::invalid_argument (starting with `who`) for GPUs on several physical GPUs (each would need its own copy of
  // the weights) and for GPU replicas of several workers; with workers, std::runtime_error when the workers'
  // models differ in their weights, and then every worker starts from the chief's weights.
  MirroredReplicas(ModelImpl& model, std::vector<LogicalDevice> devices, CrossDeviceOpsPtr ops,
                   std::shared_ptr<Communicator> workers, std::string who,
                   std::size_t bucket_cap_bytes = kDefaultBucketCapBytes);
  ~MirroredReplicas() override;

  int num_local() const override { return local_; }
  std::pair<Index, Index> slice(Index n, int r) const override;
  Plan& plan(int r, Index batch, bool training) override;
  void run(Index n, const tower::detail::ReplicaWork& work, bool reduce_gradients) override;
  const std::vector<Tensor>& gradients() const override;
  void gather(Index n, std::span<const Tensor> parts, Tensor& global) override;
  void after_update() override;
  // OpenMP threads each replica thread uses.
  int omp_threads_per_replica() const { return omp_threads_; }
  // The gradient buckets of the model's trainable weights (after a training step).
  const std::vector<GradientBucket>& buckets() const { return buckets_; }

 private:
  // Rows of a global batch of n that global replica g takes.
  std::pair<Index, Index> rows(Index n, int g) const;
  void replica_main(int r);
  // Sizes the reduction buffer and the buckets for the model's current trainable weights.
  void prepare_reduction();
  // Replica r's plan reports gradient k final; reduces the buckets that completes.
  void gradient_ready(int r, int k);
  void reduce_bucket(int r, int bucket);
  // Sends every weight in `weights` from the chief to the other workers.
  void broadcast_from_chief(const std::vector<VariablePtr>& weights);
  void check_same_model();
  std::uint64_t plan_seed(int global_replica, Index batch, bool training) const;

  ModelImpl& model_;
  std::vector<LogicalDevice> devices_;
  CrossDeviceOpsPtr ops_;
  std::shared_ptr<Communicator> workers_;
  std::string who_;
  int local_, worker_ = 0, num_workers_ = 1, omp_threads_ = 1;
  ReplicaGroup group_;
  std::map<std::tuple<int, Index, bool>, std::unique_ptr<Plan>> plans_;
  std::vector<Plan*> last_plan_;
  // The step being run.
  const tower::detail::ReplicaWork* work_ = nullptr;
  int active_ = 0;
  bool reduce_in_threads_ = false;
  std::vector<std::exception_ptr> errors_;
  std::uint64_t seed_;
  // Summed gradients: one flat buffer with a view per trainable weight.
  std::vector<VariablePtr> reduced_for_;
  Tensor reduced_;
  Index reduced_count_ = 0;
  std::vector<Tensor> reduced_views_;
  // Buckets of the summed gradients; per replica, its progress through them and, per bucket, every replica's part.
  std::size_t bucket_cap_bytes_;
  std::vector<GradientBucket> buckets_;
  std::vector<BucketTracker> trackers_;
  std::vector<std::vector<float*>> bucket_parts_;
  // Per replica: its GPU's turn when it shares the GPU with another replica, else null.
  std::vector<std::unique_ptr<std::mutex>> turn_locks_;
  std::vector<std::mutex*> turns_;
  const std::vector<Tensor>* gradients_ = nullptr;
  std::vector<float> staging_;
  std::vector<std::size_t> gather_sizes_, gather_offsets_;
  std::unique_ptr<ReplicaThreads> threads_;  // last: its threads stop before the rest goes
};

}  // namespace tower::distribute::detail
