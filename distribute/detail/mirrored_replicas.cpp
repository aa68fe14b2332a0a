#include "distribute/detail/mirrored_replicas.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

#include "api/backend/backend.h"
#include "api/core/alignment.h"
#include "api/core/device_memory.h"
#include "api/core/device_turn.h"
#include "api/core/random.h"
#include "api/engine/plan.h"
#include "api/models/model.h"
#include "api/optimizers/optimizer.h"

namespace tower::distribute::detail {

MirroredReplicas::MirroredReplicas(ModelImpl& model, std::vector<LogicalDevice> devices, CrossDeviceOpsPtr ops,
                                   std::shared_ptr<Communicator> workers, std::string who, std::size_t bucket_cap_bytes,
                                   bool mirror_variables, bool nccl_between_workers, CentralStorage central)
    : model_(model), devices_(std::move(devices)), ops_(std::move(ops)), workers_(std::move(workers)),
      who_(message_prefix(who)), local_(static_cast<int>(devices_.size())), group_(local_, workers_, this),
      last_plan_(static_cast<std::size_t>(local_), nullptr),
      errors_(static_cast<std::size_t>(local_)), seed_(next_global_seed()), bucket_cap_bytes_(bucket_cap_bytes),
      turns_(static_cast<std::size_t>(local_), nullptr), nccl_between_workers_(nccl_between_workers),
      central_(central.parameter_device), reads_(static_cast<std::size_t>(local_), false) {
  if (bucket_cap_bytes_ == 0) throw std::invalid_argument(who_ + "the gradient bucket cap must be at least one byte");
  // Replicas on several physical devices cannot share the model's variables: each holds its own copies.
  mirrored_ = mirror_variables && local_ > 1;
  for (const LogicalDevice& d : devices_)
    if (d.device != devices_[0].device) mirrored_ = true;
  if (central_) {
    if (mirror_variables || workers_)
      throw std::invalid_argument(who_ + "replicas reading one copy of the variables neither mirror them nor span workers");
    mirrored_ = false;
    for (int r = 0; r < local_; ++r)
      reads_[static_cast<std::size_t>(r)] = central.read_copies || devices_[static_cast<std::size_t>(r)].device != *central_;
  }
  if (nccl_between_workers_ && (!workers_ || !devices_[0].device.is_cuda()))
    throw std::invalid_argument(who_ + "NCCL between workers needs workers with GPU replicas; the replicas are on " +
                                devices_[0].name + (workers_ ? "" : " of one process"));
  if (devices_[0].device.is_cuda()) {
    // Logical GPUs of one GPU share its backend: their threads take turns issuing work to it (device_turn.h).
    for (std::size_t r = 0; r < turns_.size(); ++r)
      for (std::size_t i = 0; i < devices_.size(); ++i)
        if (i != r && devices_[i].device == devices_[r].device) turns_[r] = &device_turn(devices_[r].device);
  }
  if (workers_) {
    worker_ = workers_->rank();
    num_workers_ = workers_->size();
    check_same_model();
    broadcast_from_chief(model_.weights());
  }
  if (mirrored_ || central_) {
    const auto n = static_cast<std::size_t>(local_);
    copies_.resize(n);
    copy_optimizers_.resize(n);
    copy_trainable_.resize(n);
    copy_sums_.resize(n);
    copy_sum_views_.resize(n);
    model_variable_of_.resize(n);
    for (int r = 0; r < local_; ++r)
      if (has_copy(r)) make_copy(r);
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

namespace {

// Per weight of model.weights(): whether it is among the trainable weights.
std::vector<bool> trainable_mask(const ModelImpl& model) {
  const std::vector<VariablePtr> all = model.weights(), trainable = model.trainable_weights();
  std::vector<bool> mask;
  for (const VariablePtr& v : all) mask.push_back(std::find(trainable.begin(), trainable.end(), v) != trainable.end());
  return mask;
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is no std::exception";
  }
}

void move_to(const std::vector<VariablePtr>& variables, Device device) {
  for (const VariablePtr& v : variables)
    if (v->value.defined() && v->value.device() != device) v->value = v->value.to(device);
}

}  // namespace

bool MirroredReplicas::has_copy(int r) const {
  return (mirrored_ && r > 0) || (central_ && reads_[static_cast<std::size_t>(r)]);
}

ModelImpl& MirroredReplicas::replica_model(int r) {
  return has_copy(r) ? *copies_[static_cast<std::size_t>(r)] : model_;
}

std::vector<VariablePtr> MirroredReplicas::replica_weights(int r) { return replica_model(r).weights(); }

const std::shared_ptr<optimizers::Optimizer>& MirroredReplicas::replica_optimizer(int r) const {
  static const std::shared_ptr<optimizers::Optimizer> none;
  return mirrored_ && r > 0 ? copy_optimizers_[static_cast<std::size_t>(r)] : none;
}

void MirroredReplicas::make_copy(int r) {
  const auto ur = static_cast<std::size_t>(r);
  const LogicalDevice& d = devices_[ur];
  std::shared_ptr<ModelImpl> copy;
  try {
    copy = model_from_config(model_.serialize());
  } catch (const std::exception& e) {
    throw std::invalid_argument(who_ + "replica " + std::to_string(r) + " on " + d.name + " (" + d.device.to_string() +
                                ") holds its own copy of model '" + model_.name() +
                                "', rebuilt from the model's config, and the config does not rebuild: " + e.what());
  }
  const std::vector<VariablePtr> mine = model_.weights(), theirs = copy->weights();
  if (mine.size() != theirs.size())
    throw std::invalid_argument(who_ + "replica " + std::to_string(r) + "'s copy of model '" + model_.name() +
                                "', rebuilt from its config, has " + std::to_string(theirs.size()) +
                                " weights, the model " + std::to_string(mine.size()));
  for (std::size_t i = 0; i < mine.size(); ++i)
    if (mine[i]->value.shape() != theirs[i]->value.shape())
      throw std::invalid_argument(who_ + "replica " + std::to_string(r) + "'s copy of weight '" + mine[i]->path +
                                  "' has shape " + theirs[i]->value.shape().to_string() + ", the model's " +
                                  mine[i]->value.shape().to_string());
  // Layers frozen in the model after they were made: the config carries their flag, the copy keeps it.
  copies_[ur] = std::move(copy);
  copy_optimizers_[ur].reset();
  copy_trainable_[ur].clear();
  copy_sums_[ur] = Tensor();
  copy_sum_views_[ur].clear();
  for (auto it = plans_.begin(); it != plans_.end();)
    it = std::get<0>(it->first) == r ? plans_.erase(it) : std::next(it);
  last_plan_[ur] = nullptr;
  copy_variables_to(r, false);
  std::unordered_map<const Variable*, VariablePtr>& model_of = model_variable_of_[ur];
  model_of.clear();
  const std::vector<VariablePtr> copied = copies_[ur]->weights();
  for (std::size_t i = 0; i < mine.size(); ++i) model_of.emplace(copied[i].get(), mine[i]);
}

void MirroredReplicas::to_model_variables(int r, std::vector<VariablePtr>& variables) const {
  if (!has_copy(r)) return;
  const std::unordered_map<const Variable*, VariablePtr>& model_of = model_variable_of_[static_cast<std::size_t>(r)];
  for (VariablePtr& v : variables)
    if (const auto it = model_of.find(v.get()); it != model_of.end()) v = it->second;
}

void MirroredReplicas::copy_variables_to(int r, bool only_non_trainable) {
  ModelImpl& copy = *copies_[static_cast<std::size_t>(r)];
  const std::vector<VariablePtr> mine = only_non_trainable ? model_.non_trainable_weights() : model_.weights();
  const std::vector<VariablePtr> theirs = only_non_trainable ? copy.non_trainable_weights() : copy.weights();
  if (mine.size() != theirs.size())
    throw std::logic_error(who_ + "replica " + std::to_string(r) + " has " + std::to_string(theirs.size()) +
                           " copies of the model's " + std::to_string(mine.size()) + " weights");
  for (std::size_t i = 0; i < mine.size(); ++i) theirs[i]->value.copy_from(mine[i]->value);
}

void MirroredReplicas::copy_optimizer_to(int r, const optimizers::Optimizer& main, bool copy_slots) {
  std::shared_ptr<optimizers::Optimizer>& opt = copy_optimizers_[static_cast<std::size_t>(r)];
  if (!opt) {
    try {
      opt = optimizers::optimizer_from_config(main.serialize());
    } catch (const std::exception& e) {
      throw std::invalid_argument(who_ + "replica " + std::to_string(r) + " updates its own copies of the variables "
                                  "with a copy of the " + main.type() + " optimizer, made from its config, and the "
                                  "config does not rebuild: " + e.what());
    }
    copy_slots = true;
  }
  opt->set_iterations(main.iterations());
  if (opt->learning_rate() != main.learning_rate()) opt->set_learning_rate(main.learning_rate());
  if (!copy_slots || !main.built()) return;
  const std::vector<VariablePtr>& slots = main.variables();
  // Without slots there is nothing to copy, and nothing names the variables the model's optimizer was built for:
  // the replica's builds itself at its first step, for its copies of the variables that step updates.
  if (slots.empty()) return;
  if (!opt->built()) {
    // Built for the copies of the variables the model's optimizer was built for, in its order, so the slots pair
    // up by position. A slot is "<variable path>/<slot name>".
    const std::vector<VariablePtr> mine = model_.weights(), theirs = replica_model(r).weights();
    std::vector<VariablePtr> variables;
    std::size_t last = mine.size();
    for (const VariablePtr& slot : slots) {
      const std::string owner = slot->path.substr(0, slot->path.rfind('/'));
      std::size_t i = 0;
      while (i < mine.size() && mine[i]->path != owner) ++i;
      if (i == mine.size())
        throw std::logic_error(who_ + "the optimizer's slot '" + slot->path + "' belongs to no weight of model '" +
                               model_.name() + "'");
      if (i != last) variables.push_back(theirs[i]);
      last = i;
    }
    opt->build(variables);
  }
  const std::vector<VariablePtr>& theirs = opt->variables();
  if (theirs.size() != slots.size())
    throw std::logic_error(who_ + "replica " + std::to_string(r) + "'s optimizer has " + std::to_string(theirs.size()) +
                           " slots, the model's " + std::to_string(slots.size()));
  for (std::size_t i = 0; i < slots.size(); ++i) theirs[i]->value.copy_from(slots[i]->value);
}

Plan& MirroredReplicas::plan(int r, Index batch, bool training) {
  // A layer frozen or unfrozen since replica r's copy was made: the copy is remade from the model.
  if (has_copy(r) && training && trainable_mask(model_) != trainable_mask(*copies_[static_cast<std::size_t>(r)]))
    make_copy(r);
  ModelImpl& model = replica_model(r);
  auto& slot = plans_[{r, batch, training}];
  // Freezing or unfreezing a layer changes what gets gradients: such a plan is stale (as in ModelImpl::plan_for).
  if (slot && training && model.trainable_weights() != slot->trainable_weights()) slot.reset();
  if (!slot) {
    const Device device = mirrored_ || central_ ? devices_[static_cast<std::size_t>(r)].device : devices_[0].device;
    // Weights built since the last move (and every weight, the first time) join the replica's GPU.
    if (!device.is_cpu()) {
      model.to(device);
      if (const auto& opt = replica_optimizer(r); opt && opt->built()) move_to(opt->variables(), device);
    }
    PlanOptions o;
    o.batch_size = batch;
    o.training = training;
    o.backward = training;
    o.device = devices_[static_cast<std::size_t>(r)].device;
    o.replica = group_.context(r);
    o.seed = plan_seed(worker_ * local_ + r, batch, training);
    slot = std::make_unique<Plan>(model, o);
    if (training) slot->set_gradient_ready_callback([this, r](int k) { gradient_ready(r, k); });
  }
  last_plan_[static_cast<std::size_t>(r)] = slot.get();
  return *slot;
}

namespace {
std::vector<Shape> shapes_of(const std::vector<VariablePtr>& variables) {
  std::vector<Shape> shapes;
  for (const VariablePtr& v : variables) shapes.push_back(v->value.shape());
  return shapes;
}
}  // namespace

void MirroredReplicas::prepare_reduction() {
  std::vector<VariablePtr> now = model_.trainable_weights();
  if (reduced_.defined() && now == reduced_for_) return;
  // Packed as the plans pack their gradients (alignment.h), so a bucket is the same range of every buffer.
  PackedBuffers packed = pack_buffers(shapes_of(now), devices_[0].device, true);
  buckets_ = assign_buckets(packed.rooms, bucket_cap_bytes_);
  trackers_.clear();
  for (int r = 0; r < local_; ++r) trackers_.emplace_back(&buckets_, static_cast<int>(now.size()));
  bucket_parts_.assign(buckets_.size(), std::vector<float*>(static_cast<std::size_t>(local_), nullptr));
  reduced_ = std::move(packed.flat);
  reduced_views_ = std::move(packed.views);
  reduced_for_ = std::move(now);
  reduced_count_ = reduced_.numel();
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
  // Central storage: each replica reading a copy reads the variables as they are now (the last update's values).
  for (int r = 0; r < active; ++r)
    if (central_ && reads_[static_cast<std::size_t>(r)]) copy_variables_to(r, false);
  std::fill(errors_.begin(), errors_.end(), nullptr);
  active_ = active;
  work_ = &work;
  if (threads_)
    threads_->run();
  else if (active == 1)
    replica_main(0);
  work_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) {
      // The other workers may be waiting for this one in a collective of the step it has left.
      if (workers_ && num_workers_ > 1) workers_->leave_out_of_step(message_of(e));
      std::rethrow_exception(e);
    }
  if (!reduce_gradients) return;

  if (active == 1) {
    // One replica here: its own buffer holds this worker's sum (and is summed over workers in place).
    gradients_ = &last_plan_[0]->weight_grads();
    const Tensor& flat = last_plan_[0]->flat_grads();
    if (workers_) sum_over_workers(flat.data<float>(), flat.device(), static_cast<std::size_t>(flat.numel()));
    if (central_) sum_to_parameter_device(flat);
    return;
  }
  if (active == 0) reduced_.zero();  // a worker without rows adds nothing
  gradients_ = &reduced_views_;
  if (workers_) sum_over_workers(reduced_.data<float>(), reduced_.device(), static_cast<std::size_t>(reduced_count_));
  if (central_) sum_to_parameter_device(reduced_);
}

void MirroredReplicas::sum_to_parameter_device(const Tensor& sum) {
  if (sum.device() == *central_) return;
  const std::vector<VariablePtr> trainable = model_.trainable_weights();
  if (!central_sum_.defined() || central_sum_.numel() != sum.numel() || central_views_.size() != trainable.size()) {
    PackedBuffers packed = pack_buffers(shapes_of(trainable), *central_, false);
    central_sum_ = std::move(packed.flat);
    central_views_ = std::move(packed.views);
  }
  if (sum.numel() != central_sum_.numel())
    throw std::logic_error(who_ + "the summed gradients have " + std::to_string(sum.numel()) +
                           " values, the model's trainable weights take " + std::to_string(central_sum_.numel()));
  copy_bytes(central_sum_.raw_data(), *central_, sum.raw_data(), sum.device(), sum.nbytes());
  gradients_ = &central_views_;
}

void MirroredReplicas::sum_over_workers(float* data, Device device, std::size_t count) {
  if (device.is_cpu()) return workers_->all_reduce_sum(data, count, num_workers_);
  if (nccl_between_workers_) {
    // Every worker takes part, those without rows with zeros, as over MPI.
    if (!worker_gpus_) worker_gpus_ = make_nccl_communicator({devices_[0]}, workers_, who_);
    worker_gpus_->all_reduce_sum(0, data, data, count);
    worker_gpus_->join(0);
    return;
  }
  worker_staging_.resize(count);
  copy_bytes(worker_staging_.data(), Device::cpu(), data, device, count * sizeof(float));
  workers_->all_reduce_sum(worker_staging_.data(), count, num_workers_);
  copy_bytes(data, device, worker_staging_.data(), Device::cpu(), count * sizeof(float));
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
    // A replica still waiting at a collective for this one would wait forever: it throws instead.
    if (active_ > 1) group_.barrier().depart(r);
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
  // The moving statistics the first replica's batches updated in its copy are the variables' new values.
  if (central_ && reads_[0]) {
    const std::vector<VariablePtr> mine = model_.non_trainable_weights(), theirs = copies_[0]->non_trainable_weights();
    for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i) mine[i]->value.copy_from(theirs[i]->value);
  }
  // Only the chief's first replica updates the moving statistics; the other workers take its values.
  if (workers_ && num_workers_ > 1) broadcast_from_chief(model_.non_trainable_weights());
  // And so do the other local replicas holding their own copies.
  if (mirrored_)
    for (int r = 1; r < local_; ++r) copy_variables_to(r, true);
}

const std::vector<Tensor>& MirroredReplicas::copy_gradients(int r) {
  const auto ur = static_cast<std::size_t>(r);
  // An all-reduce left the sum in the replica's own gradient buffer (the workers' sum is only in the first's).
  if (!workers_ && reduce_in_threads_ && r < active_ && ops_->sums_in_every_part())
    return last_plan_[ur]->weight_grads();
  // Else it is copied from the first replica's device: one buffer, as the gradients are one.
  const std::vector<VariablePtr>& trainable = copy_trainable_[ur];
  const Device device = devices_[ur].device;
  Tensor& flat = copy_sums_[ur];
  std::vector<Tensor>& views = copy_sum_views_[ur];
  const Tensor& sum = gradients_ == &reduced_views_ ? reduced_ : last_plan_[0]->flat_grads();
  if (!flat.defined() || flat.numel() != sum.numel() || flat.device() != device || views.size() != trainable.size()) {
    PackedBuffers packed = pack_buffers(shapes_of(trainable), device, false);
    flat = std::move(packed.flat);
    views = std::move(packed.views);
  }
  if (sum.numel() != flat.numel())
    throw std::logic_error(who_ + "the summed gradients have " + std::to_string(sum.numel()) + " values, replica " +
                           std::to_string(r) + "'s trainable copies take " + std::to_string(flat.numel()));
  copy_bytes(flat.raw_data(), device, sum.raw_data(), sum.device(), sum.nbytes());
  return views;
}

void MirroredReplicas::update_copies(const optimizers::Optimizer& main, const tower::detail::CopyUpdate& update) {
  if (!mirrored_) return;
  if (!gradients_) throw std::logic_error(who_ + "update_copies() before a training step");
  drop_replaced_optimizers();
  for (int r = 1; r < local_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    copy_trainable_[ur] = copies_[ur]->trainable_weights();
    copy_optimizer_to(r, main, false);
    update(copy_trainable_[ur], copy_gradients(r), *copy_optimizers_[ur]);
  }
}

void MirroredReplicas::drop_replaced_optimizers() {
  const optimizers::OptimizerPtr& now = model_.optimizer();
  if (now == copied_optimizer_) return;
  for (std::shared_ptr<optimizers::Optimizer>& opt : copy_optimizers_) opt.reset();
  copied_optimizer_ = now;
}

void MirroredReplicas::sync_before_run() {
  if (!copies_diverged_) sync_from_model();
}

void MirroredReplicas::sync_from_model() {
  copies_diverged_ = false;
  if (!mirrored_) return;
  drop_replaced_optimizers();
  for (int r = 1; r < local_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    if (trainable_mask(model_) != trainable_mask(*copies_[ur]))
      make_copy(r);
    else
      copy_variables_to(r, false);
    if (copy_optimizers_[ur] && model_.optimizer()) copy_optimizer_to(r, *model_.optimizer(), true);
  }
}

void MirroredReplicas::broadcast_from_chief(const std::vector<VariablePtr>& weights) {
  std::size_t total = 0;
  for (const VariablePtr& v : weights) total += static_cast<std::size_t>(v->value.numel());
  if (total == 0 || num_workers_ <= 1) return;
  staging_.resize(total);
  // Through host memory (MPI), wherever the weights live.
  if (worker_ == 0) {
    std::size_t offset = 0;
    for (const VariablePtr& v : weights) {
      copy_bytes(staging_.data() + offset, Device::cpu(), v->value.raw_data(), v->value.device(), v->value.nbytes());
      offset += static_cast<std::size_t>(v->value.numel());
    }
  }
  workers_->broadcast(staging_.data(), total * sizeof(float), 0);
  if (worker_ == 0) return;
  std::size_t offset = 0;
  for (const VariablePtr& v : weights) {
    copy_bytes(v->value.raw_data(), v->value.device(), staging_.data() + offset, Device::cpu(), v->value.nbytes());
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
