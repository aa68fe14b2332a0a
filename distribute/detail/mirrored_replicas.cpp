#include "distribute/detail/mirrored_replicas.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"
#include "api/core/random.h"
#include "api/engine/plan.h"
#include "api/models/model.h"

namespace tower::distribute::detail {

MirroredReplicas::MirroredReplicas(ModelImpl& model, std::vector<LogicalDevice> devices, CrossDeviceOpsPtr ops,
                                   std::shared_ptr<Communicator> workers, std::string who, std::size_t bucket_cap_bytes)
    : model_(model), devices_(std::move(devices)), ops_(std::move(ops)), workers_(std::move(workers)),
      who_(message_prefix(who)), local_(static_cast<int>(devices_.size())), group_(local_, workers_),
      last_plan_(static_cast<std::size_t>(local_), nullptr),
      errors_(static_cast<std::size_t>(local_)), seed_(next_global_seed()), bucket_cap_bytes_(bucket_cap_bytes),
      turns_(static_cast<std::size_t>(local_), nullptr) {
  if (bucket_cap_bytes_ == 0) throw std::invalid_argument(who_ + "the gradient bucket cap must be at least one byte");
  for (const LogicalDevice& d : devices_) {
    if (d.device == devices_[0].device) continue;
    throw std::invalid_argument(
        who_ + "replicas on " + devices_[0].name + " (" + devices_[0].device.to_string() + ") and " + d.name + " (" +
        d.device.to_string() + ") would each need a copy of the weights on their own GPU, which Tower does not keep "
        "yet; run the replicas on logical GPUs of one GPU (TOWER_LOGICAL_GPUS, set_logical_gpus_per_gpu) or on CPU "
        "devices");
  }
  if (devices_[0].device.is_cuda()) {
    if (workers_)
      throw std::invalid_argument(who_ + "replicas on GPUs (" + devices_[0].name +
                                  ") are not available to several workers yet; use CPU devices");
    // Logical GPUs of one GPU share its backend: their threads take turns issuing work.
    if (local_ > 1) {
      turn_locks_.push_back(std::make_unique<std::mutex>());
      std::fill(turns_.begin(), turns_.end(), turn_locks_.back().get());
    }
  }
  if (workers_) {
    worker_ = workers_->rank();
    num_workers_ = workers_->size();
    check_same_model();
    broadcast_from_chief(model_.weights());
  }
  omp_threads_ = std::max(1, backend::num_threads() / local_);
  if (local_ > 1) threads_ = std::make_unique<ReplicaThreads>(local_, omp_threads_, [this](int r) { replica_main(r); });
}

MirroredReplicas::~MirroredReplicas() = default;

// Random layers (Dropout) draw from a generator per plan. Seeding it from the replica, the batch size and one
// seed drawn when the replicas are made, rather than from the global generator per plan, keeps every worker's
// global generator in step although workers without rows in a short batch make fewer plans.
std::uint64_t MirroredReplicas::plan_seed(int global_replica, Index batch, bool training) const {
  std::uint64_t x = seed_ ^ (static_cast<std::uint64_t>(global_replica) << 48) ^
                    (static_cast<std::uint64_t>(batch) << 1) ^ static_cast<std::uint64_t>(training);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x ? x : 1;
}

std::pair<Index, Index> MirroredReplicas::rows(Index n, int g) const {
  // tf.distribute's split: consecutive chunks of ceil(n / replicas), so the last replicas may get fewer or none.
  const Index replicas = static_cast<Index>(num_workers_) * local_;
  const Index chunk = (n + replicas - 1) / replicas;
  return {std::min(n, chunk * g), std::min(n, chunk * (g + 1))};
}

std::pair<Index, Index> MirroredReplicas::slice(Index n, int r) const { return rows(n, worker_ * local_ + r); }

Plan& MirroredReplicas::plan(int r, Index batch, bool training) {
  auto& slot = plans_[{r, batch, training}];
  // Freezing or unfreezing a layer changes what gets gradients: such a plan is stale (as in ModelImpl::plan_for).
  if (slot && training && model_.trainable_weights() != slot->trainable_weights()) slot.reset();
  if (!slot) {
    // Weights built since the last move (and every weight, the first time) join the replicas' GPU.
    if (!devices_[0].device.is_cpu()) model_.to(devices_[0].device);
    PlanOptions o;
    o.batch_size = batch;
    o.training = training;
    o.backward = training;
    o.device = devices_[static_cast<std::size_t>(r)].device;
    o.replica = group_.context(r);
    o.seed = plan_seed(worker_ * local_ + r, batch, training);
    slot = std::make_unique<Plan>(model_, o);
    if (training) slot->set_gradient_ready_callback([this, r](int k) { gradient_ready(r, k); });
  }
  last_plan_[static_cast<std::size_t>(r)] = slot.get();
  return *slot;
}

void MirroredReplicas::prepare_reduction() {
  std::vector<VariablePtr> now = model_.trainable_weights();
  if (reduced_.defined() && now == reduced_for_) return;
  Index total = 0;
  std::vector<Index> sizes;
  for (const VariablePtr& v : now) {
    total += v->value.numel();
    sizes.push_back(v->value.numel());
  }
  buckets_ = assign_buckets(sizes, bucket_cap_bytes_);
  trackers_.clear();
  for (int r = 0; r < local_; ++r) trackers_.emplace_back(&buckets_, static_cast<int>(sizes.size()));
  bucket_parts_.assign(buckets_.size(), std::vector<float*>(static_cast<std::size_t>(local_), nullptr));
  reduced_ = Tensor::zeros(Shape{std::max<Index>(total, 1)}, DType::float32, devices_[0].device);
  reduced_views_.clear();
  Index offset = 0;
  for (const VariablePtr& v : now) {
    reduced_views_.push_back(reduced_.slice(offset, offset + v->value.numel()).reshape(v->value.shape()));
    offset += v->value.numel();
  }
  reduced_for_ = std::move(now);
  reduced_count_ = total;
}

void MirroredReplicas::run(Index n, const tower::detail::ReplicaWork& work, bool reduce_gradients) {
  const int replicas = num_workers_ * local_;
  const Index chunk = (n + replicas - 1) / replicas;
  const int in_sync = n > 0 ? static_cast<int>((n + chunk - 1) / chunk) : 0;
  const int active = std::clamp(in_sync - worker_ * local_, 0, local_);
  const int active_workers = (in_sync + local_ - 1) / local_;
  if (workers_ && active_workers < num_workers_) workers_->prepare_prefix(std::max(active_workers, 1));
  group_.begin_step(active, in_sync, active_workers);
  gradients_ = nullptr;
  reduce_in_threads_ = reduce_gradients && active > 1;
  if (reduce_gradients && (active != 1 || workers_)) prepare_reduction();
  if (reduce_in_threads_)
    for (int r = 0; r < active; ++r) {
      const Tensor& flat = last_plan_[static_cast<std::size_t>(r)]->flat_grads();
      if (flat.numel() != reduced_count_)
        throw std::logic_error(who_ + "replica " + std::to_string(r) + "'s gradients have " +
                               std::to_string(flat.numel()) + " values, the model's trainable weights " +
                               std::to_string(reduced_count_));
      trackers_[static_cast<std::size_t>(r)].reset();
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        bucket_parts_[b][static_cast<std::size_t>(r)] = flat.data<float>() + buckets_[b].begin;
    }
  std::fill(errors_.begin(), errors_.end(), nullptr);
  active_ = active;
  work_ = &work;
  if (threads_)
    threads_->run();
  else if (active == 1)
    replica_main(0);
  work_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
  if (!reduce_gradients) return;

  if (active == 1) {
    // One replica here: its own buffer holds this worker's sum (and is summed over workers in place).
    gradients_ = &last_plan_[0]->weight_grads();
    const Tensor& flat = last_plan_[0]->flat_grads();
    if (workers_) workers_->all_reduce_sum(flat.data<float>(), static_cast<std::size_t>(flat.numel()), num_workers_);
    return;
  }
  if (active == 0) reduced_.zero();  // a worker without rows adds nothing
  gradients_ = &reduced_views_;
  if (workers_)
    workers_->all_reduce_sum(reduced_.data<float>(), static_cast<std::size_t>(reduced_count_), num_workers_);
}

void MirroredReplicas::replica_main(int r) {
  if (r >= active_) return;
  try {
    const TurnHold turn(turns_[static_cast<std::size_t>(r)]);
    (*work_)(r);
    if (reduce_in_threads_) {
      // Backward reported every gradient (plans do), so every bucket has been reduced; this covers work that did
      // not run backward on the plan the step made, which leaves the others waiting otherwise.
      BucketTracker& tracker = trackers_[static_cast<std::size_t>(r)];
      for (int b = tracker.reduced(); b < static_cast<int>(buckets_.size()); ++b) reduce_bucket(r, b);
      ops_->end_reduction(r, devices_);
    }
  } catch (const Aborted&) {
    // Another replica failed first; its exception is the one reported.
  } catch (...) {
    errors_[static_cast<std::size_t>(r)] = std::current_exception();
    group_.barrier().abort();
  }
}

void MirroredReplicas::gradient_ready(int r, int k) {
  if (!reduce_in_threads_ || r >= active_) return;
  const auto [first, last] = trackers_[static_cast<std::size_t>(r)].mark_ready(k);
  for (int b = first; b < last; ++b) reduce_bucket(r, b);
}

void MirroredReplicas::reduce_bucket(int r, int b) {
  const GradientBucket& bucket = buckets_[static_cast<std::size_t>(b)];
  group_.barrier().arrive_and_wait();
  ops_->reduce(r, active_, bucket_parts_[static_cast<std::size_t>(b)].data(), reduced_.data<float>() + bucket.begin,
               bucket.end - bucket.begin, devices_, group_.barrier());
}

const std::vector<Tensor>& MirroredReplicas::gradients() const {
  if (!gradients_) throw std::logic_error(who_ + "gradients() before a training step");
  return *gradients_;
}

void MirroredReplicas::gather(Index n, std::span<const Tensor> parts, Tensor& global) {
  if (!global.defined() || global.rank() == 0 || global.dim(0) != n)
    throw std::logic_error(who_ + "gather() needs a [" + std::to_string(n) + ", ...] tensor");
  const std::size_t row = n > 0 ? global.nbytes() / static_cast<std::size_t>(n) : 0;
  char* out = static_cast<char*>(global.raw_data());
  for (int r = 0; r < local_; ++r) {
    const auto [begin, end] = slice(n, r);
    if (begin == end) continue;
    const Tensor& part = parts[static_cast<std::size_t>(r)];
    const std::size_t bytes = static_cast<std::size_t>(end - begin) * row;
    if (!part.defined() || part.nbytes() != bytes || part.dtype() != global.dtype())
      throw std::logic_error(who_ + "gather(): replica " + std::to_string(r) + "'s part has " +
                             std::to_string(part.defined() ? part.nbytes() : 0) + " bytes, expected " +
                             std::to_string(bytes));
    copy_bytes(out + static_cast<std::size_t>(begin) * row, global.device(), part.raw_data(), part.device(),
                        bytes);
  }
  if (!workers_) return;
  gather_sizes_.resize(static_cast<std::size_t>(num_workers_));
  gather_offsets_.resize(static_cast<std::size_t>(num_workers_));
  for (int w = 0; w < num_workers_; ++w) {
    const Index begin = rows(n, w * local_).first, end = rows(n, (w + 1) * local_ - 1).second;
    gather_offsets_[static_cast<std::size_t>(w)] = static_cast<std::size_t>(begin) * row;
    gather_sizes_[static_cast<std::size_t>(w)] = static_cast<std::size_t>(end - begin) * row;
  }
  workers_->all_gather(out, gather_sizes_, gather_offsets_);
}

void MirroredReplicas::after_update() {
  // Only the chief's first replica updates the moving statistics; the other workers take its values.
  if (workers_ && num_workers_ > 1) broadcast_from_chief(model_.non_trainable_weights());
}

void MirroredReplicas::broadcast_from_chief(const std::vector<VariablePtr>& weights) {
  std::size_t total = 0;
  for (const VariablePtr& v : weights) total += static_cast<std::size_t>(v->value.numel());
  if (total == 0 || num_workers_ <= 1) return;
  staging_.resize(total);
  if (worker_ == 0) {
    std::size_t offset = 0;
    for (const VariablePtr& v : weights) {
      std::memcpy(staging_.data() + offset, v->value.data<float>(), v->value.nbytes());
      offset += static_cast<std::size_t>(v->value.numel());
    }
  }
  workers_->broadcast(staging_.data(), total * sizeof(float), 0);
  if (worker_ == 0) return;
  std::size_t offset = 0;
  for (const VariablePtr& v : weights) {
    std::memcpy(v->value.data<float>(), staging_.data() + offset, v->value.nbytes());
    offset += static_cast<std::size_t>(v->value.numel());
  }
}

void MirroredReplicas::check_same_model() {
  const std::vector<VariablePtr> weights = model_.weights();
  std::int64_t values = 0;
  for (const VariablePtr& v : weights) values += v->value.numel();
  const std::size_t w = static_cast<std::size_t>(num_workers_);
  std::vector<std::int64_t> all(3 * w, 0);
  all[3 * static_cast<std::size_t>(worker_)] = static_cast<std::int64_t>(weights.size());
  all[3 * static_cast<std::size_t>(worker_) + 1] = values;
  all[3 * static_cast<std::size_t>(worker_) + 2] = local_;
  std::vector<std::size_t> sizes(w, 3 * sizeof(std::int64_t)), offsets(w);
  for (std::size_t i = 0; i < w; ++i) offsets[i] = i * 3 * sizeof(std::int64_t);
  workers_->all_gather(all.data(), sizes, offsets);
  for (std::size_t i = 1; i < w; ++i)
    if (all[3 * i] != all[0] || all[3 * i + 1] != all[1] || all[3 * i + 2] != all[2])
      throw std::runtime_error(who_ + "worker " + std::to_string(i) + " has a model of " + std::to_string(all[3 * i]) +
                               " weights (" + std::to_string(all[3 * i + 1]) + " values) on " +
                               std::to_string(all[3 * i + 2]) + " replicas, the chief one of " +
                               std::to_string(all[0]) + " weights (" + std::to_string(all[1]) + " values) on " +
                               std::to_string(all[2]) + " replicas; every worker must build the same model");
}

}  // namespace tower::distribute::detail
