#pragma once
// MirroredReplicas: one model's replicas under a OneDeviceStrategy, MirroredStrategy or
// MultiWorkerMirroredStrategy. Each local replica has its own plans (its rows of the batch, its activations and
// gradient buffer) over the model's one set of layers and weights, and runs on its own thread (in the calling
// thread when there is one replica). CPU replicas share the weights' memory, so the one optimizer update is
// seen by all at once, and only the first replica writes BatchNormalization's moving statistics.
//
// A training step: every replica runs forward and backward on its rows; then, after a barrier, the replica
// threads sum their flat gradient buffers with the strategy's CrossDeviceOps into one buffer (a single replica's
// buffer is used as it is); with several workers that buffer is then summed over the workers (MPI), workers
// without rows contributing zeros. Plans and buffers are made on first use per batch size, so steady-state
// steps allocate nothing.
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "api/models/distribution.h"
#include "api/engine/layer.h"
#include "distribute/cross_device_ops.h"
#include "distribute/detail/communicator.h"
#include "distribute/detail/replica_group.h"
#include "distribute/detail/replica_threads.h"

namespace tower::distribute::detail {

class MirroredReplicas final : public tower::detail::Replicas {
 public:
  // Replicas of `model` on `devices` (CPU devices: this build has no CUDA backend), reduced by `ops`; with
  // `workers`, the same number of replicas on every worker. Throws std::invalid_argument (starting with `who`)
  // for GPU devices; with workers, std::runtime_error when the workers' models differ in their weights, and then
  // every worker starts from the chief's weights.
  MirroredReplicas(ModelImpl& model, std::vector<LogicalDevice> devices, CrossDeviceOpsPtr ops,
                   std::shared_ptr<Communicator> workers, std::string who);
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

 private:
  // Rows of a global batch of n that global replica g takes.
  std::pair<Index, Index> rows(Index n, int g) const;
  void replica_main(int r);
  // Sizes the reduction buffer for the model's current trainable weights.
  void prepare_reduction();
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
  std::vector<float*> parts_;
  std::vector<std::exception_ptr> errors_;
  std::uint64_t seed_;
  // Summed gradients: one flat buffer with a view per trainable weight.
  std::vector<VariablePtr> reduced_for_;
  Tensor reduced_;
  Index reduced_count_ = 0;
  std::vector<Tensor> reduced_views_;
  const std::vector<Tensor>* gradients_ = nullptr;
  std::vector<float> staging_;
  std::vector<std::size_t> gather_sizes_, gather_offsets_;
  std::unique_ptr<ReplicaThreads> threads_;  // last: its threads stop before the rest goes
};

}  // namespace tower::distribute::detail
