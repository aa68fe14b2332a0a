#pragma once
// MirroredReplicas: one model's replicas under a OneDeviceStrategy, MirroredStrategy or
// MultiWorkerMirroredStrategy. Each local replica has its own plans (its rows of the batch, its activations and
// gradient buffer) and runs on its own thread (in the calling thread when there is one replica).
//
// Variables. Replicas on one device share the model's variables: CPU replicas, and GPU replicas that are logical
// GPUs of one physical GPU (the model's weights move there), so the one optimizer update is seen by all at once,
// and only the first replica writes BatchNormalization's moving statistics. Replicas on several physical GPUs
// (and every replica, with mirror_variables) hold their own copies instead (mirrored variables): the first
// replica's copy is the model's own variables; every other replica r runs a model of its own, rebuilt from the
// model's config, whose variables are made from the model's when the replicas are made (a broadcast) and live
// on r's device. After the gradients are summed, each replica's copies take the same optimizer step with the
// same summed gradients (update_copies: a copy of the model's optimizer per replica, with its own slots, made
// again when compile replaces the model's optimizer), and
// the non-trainable variables (BatchNormalization's moving statistics, which only the first replica updates)
// are copied from the first replica's after every step: the values of the first replica, as Keras on
// tf.distribute reports them. Reading the model's weights therefore reads the first replica's copy.
// sync_from_model copies the model's variables and optimizer slots to the other replicas again when they may
// have been written outside the strategy. Replicas sharing a physical GPU take turns issuing work to it
// (TurnHold in barrier.h).
//
// A training step: every replica runs forward and backward on its rows. The gradients are grouped into buckets
// (gradient_buckets.h, bucket_cap_bytes each); as soon as a replica's backward has produced a bucket, its thread
// meets the others at a barrier and they sum that bucket of their flat gradient buffers with the strategy's
// CrossDeviceOps into one buffer, while later buckets are still being computed (a single replica's buffer is used
// as it is). With several workers that buffer is then summed over the workers, workers without rows
// contributing zeros: with NCCL between the workers' GPUs, or with MPI from host memory (worker_reduction.h).
// Replicas with their own copies take the sum in their own buffer (NcclAllReduce within one worker leaves it
// there; otherwise it is copied from the first replica's device). Plans and buffers are made on first use per
// batch size, so steady-state steps allocate nothing.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "api/models/distribution.h"
#include "api/engine/layer.h"
#include "distribute/cross_device_ops.h"
#include "distribute/detail/communicator.h"
#include "distribute/detail/device_communicator.h"
#include "distribute/detail/gradient_buckets.h"
#include "distribute/detail/replica_group.h"
#include "distribute/detail/replica_threads.h"

namespace tower::distribute::detail {

// Central storage (CentralStorageStrategy): the model's variables, and its optimizer's slots, stay on
// parameter_device, where the one optimizer update runs. Replicas on that device compute with them in place;
// every other replica (every replica, with read_copies) computes with a copy of the model rebuilt from its config
// on its own device, into which the variables are read at the start of every step (as TensorFlow reads a variable
// onto the device that uses it). The summed gradients are copied to the parameter device when they are summed
// elsewhere; the first replica's moving statistics are copied back to the variables after each update. No replica
// has an optimizer of its own.
struct CentralStorage {
  std::optional<Device> parameter_device;  // none: not central storage
  bool read_copies = false;                // for tests: replicas on the parameter device read copies too
};

class MirroredReplicas final : public tower::detail::Replicas, private ReplicaVariables {
 public:
  // Replicas of `model` on `devices`, reduced by `ops` in buckets of bucket_cap_bytes; with `workers`, the same
  // number of replicas on every worker, whose sums are added over the workers with NCCL (nccl_between_workers:
  // GPU replicas, one NCCL rank per worker on its first replica's GPU) or MPI (from host memory). Replicas hold
  // their own copies of the variables when `devices` span several physical GPUs, or with mirror_variables (on any
  // devices: the tests make CPU replicas hold copies exactly as GPU replicas do). Throws std::invalid_argument
  // (starting with `who`) when a replica's copy of the model cannot be rebuilt from the model's config (a layer
  // the registry does not know), and for nccl_between_workers without workers or on CPU devices; with workers,
  // std::runtime_error when the workers' models differ in their weights, and then every worker starts from the
  // chief's weights.
  MirroredReplicas(ModelImpl& model, std::vector<LogicalDevice> devices, CrossDeviceOpsPtr ops,
                   std::shared_ptr<Communicator> workers, std::string who,
                   std::size_t bucket_cap_bytes = kDefaultBucketCapBytes, bool mirror_variables = false,
                   bool nccl_between_workers = false, CentralStorage central = {});
  ~MirroredReplicas() override;

  int num_local() const override { return local_; }
  std::pair<Index, Index> slice(Index n, int r) const override;
  Plan& plan(int r, Index batch, bool training) override;
  void run(Index n, const tower::detail::ReplicaWork& work, bool reduce_gradients) override;
  const std::vector<Tensor>& gradients() const override;
  void gather(Index n, std::span<const Tensor> parts, Tensor& global) override;
  void after_update() override;
  void update_copies(const optimizers::Optimizer& main, const tower::detail::CopyUpdate& update) override;
  void sync_from_model() override;
  void sync_before_run() override;
  // True when replicas hold their own copies of the variables.
  bool mirrored() const override { return mirrored_; }
  // True when replica r computes with a model of its own: a mirrored copy, or a copy it reads the central
  // variables into.
  bool has_copy(int r) const;
  // Replica r's model: r's copy when has_copy(r), else the model itself.
  ModelImpl& replica_model(int r);
  // Replica r's copies of the model's weights (weights() order): the model's own for replica 0.
  std::vector<VariablePtr> replica_weights(int r);
  // Replica r's optimizer (r >= 1 with copies, after its first update), else null.
  const std::shared_ptr<optimizers::Optimizer>& replica_optimizer(int r) const;
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
  // data[0, count) of `device` = its sum over every worker (NCCL or MPI).
  void sum_over_workers(float* data, Device device, std::size_t count);
  // Central storage: makes gradients() a copy of `sum` on the parameter device when `sum` is elsewhere.
  void sum_to_parameter_device(const Tensor& sum);
  // Sends every weight in `weights` from the chief to the other workers.
  void broadcast_from_chief(const std::vector<VariablePtr>& weights);
  void check_same_model();
  // Makes replica r's copy of the model (and drops its optimizer), on its device.
  void make_copy(int r);
  // Copies the model's variables into replica r's (all of them, or only the non-trainable ones).
  void copy_variables_to(int r, bool only_non_trainable);
  // Sets replica r's optimizer to the model optimizer's step and learning rate, making it (from the model
  // optimizer's config) when there is none, and then copying the slots (an optimizer without slots builds itself
  // at its first step). copy_slots: also when it exists already.
  void copy_optimizer_to(int r, const optimizers::Optimizer& main, bool copy_slots);
  // compile() replaced the model's optimizer since the replicas' optimizers were made: they are dropped, to be
  // made again from the new one (Keras' compile replaces the optimizer: type, hyperparameters and slots).
  void drop_replaced_optimizers();
  // The summed gradients for replica r's copies, on its device.
  const std::vector<Tensor>& copy_gradients(int r);
  std::uint64_t plan_seed(int global_replica, Index batch, bool training) const;
  // ReplicaVariables, for updates in replica context.
  void to_model_variables(int r, std::vector<VariablePtr>& variables) const override;
  void own_copies_diverged() override { copies_diverged_ = true; }

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
  std::vector<std::mutex*> turns_;
  const std::vector<Tensor>* gradients_ = nullptr;
  std::vector<float> staging_;
  // Between workers: NCCL over every worker's first GPU (made on first use), else MPI from host memory.
  bool nccl_between_workers_ = false;
  std::shared_ptr<DeviceCommunicator> worker_gpus_;
  std::vector<float> worker_staging_;
  std::vector<std::size_t> gather_sizes_, gather_offsets_;
  // Mirrored variables: per replica (index 0 unused), its model, its optimizer, its trainable copies, and its
  // buffer of summed gradients with a view per trainable weight.
  bool mirrored_ = false;
  std::vector<std::shared_ptr<ModelImpl>> copies_;
  std::vector<std::shared_ptr<optimizers::Optimizer>> copy_optimizers_;
  // The model's optimizer those are copies of (held, so that a replacement never has its address).
  std::shared_ptr<const optimizers::Optimizer> copied_optimizer_;
  std::vector<std::vector<VariablePtr>> copy_trainable_;
  std::vector<Tensor> copy_sums_;
  std::vector<std::vector<Tensor>> copy_sum_views_;
  // Per replica with a copy: the model's variable of each of its copies (to_model_variables).
  std::vector<std::unordered_map<const Variable*, VariablePtr>> model_variable_of_;
  // Set when copies followed their own gradients inside distribute::run; cleared by sync_from_model.
  std::atomic<bool> copies_diverged_{false};
  // Central storage: the variables' device, per replica whether it reads a copy, and the sum on that device.
  std::optional<Device> central_;
  std::vector<bool> reads_;
  Tensor central_sum_;
  std::vector<Tensor> central_views_;
  std::unique_ptr<ReplicaThreads> threads_;  // last: its threads stop before the rest goes
};

}  // namespace tower::distribute::detail
