#include "distribute/detail/replica_group.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"

namespace tower::distribute::detail {

class ReplicaGroup::Context final : public ReplicaContext {
 public:
  Context(ReplicaGroup& group, int local) : group_(group), local_(local) {}
  int num_replicas_in_sync() const override { return group_.in_sync_; }
  int replica_id_in_sync_group() const override {
    return (group_.workers_ ? group_.workers_->rank() * group_.local_ : 0) + local_;
  }
  void all_reduce_sum(double* values, std::size_t count) override { group_.all_reduce_sum(local_, values, count); }
  void all_reduce_sum(double* values, std::size_t count, Device device) override {
    group_.all_reduce_sum(local_, values, count, device);
  }
  void all_reduce_sum(float* values, std::size_t count, Device device) override {
    group_.all_reduce_sum(local_, values, count, device);
  }
  void merge_call(const std::function<void()>& fn) override { group_.merge_call(local_, fn); }
  int local_replica_id() const override { return local_; }
  bool mirrored_variables() const override { return group_.variables_ && group_.variables_->mirrored(); }
  void to_model_variables(std::vector<VariablePtr>& variables) const override {
    if (group_.variables_) group_.variables_->to_model_variables(local_, variables);
  }
  void own_copies_diverged() override {
    if (group_.variables_) group_.variables_->own_copies_diverged();
  }

 private:
  ReplicaGroup& group_;
  int local_;
};

ReplicaGroup::ReplicaGroup(int local, std::shared_ptr<Communicator> workers, ReplicaVariables* variables)
    : local_(local), workers_(std::move(workers)), variables_(variables), parity_(static_cast<std::size_t>(local), 0) {
  for (int r = 0; r < local; ++r) contexts_.push_back(std::make_unique<Context>(*this, r));
  for (int g = 0; g < 2; ++g) {
    records_[g].resize(static_cast<std::size_t>(local));
    slots_[g].resize(static_cast<std::size_t>(local));
    float_slots_[g].resize(static_cast<std::size_t>(local));
  }
  device_parts_.resize(static_cast<std::size_t>(local));
  device_sums_.resize(static_cast<std::size_t>(local));
  device_copies_.resize(static_cast<std::size_t>(local));
  host_staging_.resize(static_cast<std::size_t>(local));
  float_host_staging_.resize(static_cast<std::size_t>(local));
}

ReplicaGroup::~ReplicaGroup() = default;

ReplicaContext* ReplicaGroup::context(int r) { return contexts_[static_cast<std::size_t>(r)].get(); }

void ReplicaGroup::begin_step(int active, int in_sync, int active_workers) {
  active_ = active;
  in_sync_ = in_sync;
  active_workers_ = active_workers;
  barrier_.reset(std::max(active, 1));
  std::fill(parity_.begin(), parity_.end(), 0);
}

namespace {

// What replica r does in a collective of `kind` (ReplicaGroup::Collective's order) over `count` values.
std::string describe(int r, int kind, std::size_t count) {
  const std::string who = "replica " + std::to_string(r);
  switch (kind) {
    case 0:
      return who + " all-reduces " + std::to_string(count) +
             " doubles (a synchronized BatchNormalization's sums, apply_gradients' check of its variables)";
    case 1:
      return who + " all-reduces " + std::to_string(count) + " floats (apply_gradients' gradients)";
    default:
      return who + " is in a merge_call (apply_gradients' update of one copy of the variables)";
  }
}

// `buffer` as at least `bytes` bytes of `device`.
void* device_buffer(std::shared_ptr<Storage>& buffer, std::size_t bytes, Device device) {
  if (!buffer || buffer->bytes() < bytes || buffer->device() != device)
    buffer = std::make_shared<Storage>(std::max<std::size_t>(bytes, sizeof(double)), device);
  return buffer->data();
}

}  // namespace

int ReplicaGroup::meet(int r, Collective kind, std::size_t count) {
  const auto ur = static_cast<std::size_t>(r);
  const int generation = parity_[ur];
  parity_[ur] ^= 1;
  if (active_ <= 1) return generation;
  std::vector<Record>& records = records_[generation];
  records[ur] = {kind, count};
  barrier_.arrive_and_wait();
  for (int k = 0; k < active_; ++k) {
    const Record& other = records[static_cast<std::size_t>(k)];
    if (other.kind == kind && other.count == count) continue;
    throw std::logic_error("distribute: " + describe(r, static_cast<int>(kind), count) + " while " +
                           describe(k, static_cast<int>(other.kind), other.count) +
                           ": every replica of a step must make the same collective calls, in the same order");
  }
  return generation;
}

template <class T>
std::vector<std::vector<T>>& ReplicaGroup::slots(int generation) {
  if constexpr (std::is_same_v<T, double>) return slots_[generation];
  else return float_slots_[generation];
}

template <class T>
std::vector<T>& ReplicaGroup::result() {
  if constexpr (std::is_same_v<T, double>) return result_;
  else return float_result_;
}

template <class T>
std::vector<T>& ReplicaGroup::host_staging(int r) {
  if constexpr (std::is_same_v<T, double>) return host_staging_[static_cast<std::size_t>(r)];
  else return float_host_staging_[static_cast<std::size_t>(r)];
}

template <class T>
void ReplicaGroup::all_reduce_host(int r, T* values, std::size_t count, Collective kind) {
  if (in_sync_ <= 1) return;
  const int generation = parity_[static_cast<std::size_t>(r)];
  std::vector<std::vector<T>>& parts = slots<T>(generation);
  // The values go to r's slot before the meeting, which every replica leaves only once all have written theirs.
  parts[static_cast<std::size_t>(active_ > 1 ? r : 0)].assign(values, values + count);
  meet(r, kind, count);
  const auto sum_local = [&](T* out) {
    std::copy(parts[0].begin(), parts[0].end(), out);
    for (int k = 1; k < active_; ++k) {
      const std::vector<T>& s = parts[static_cast<std::size_t>(k)];
      for (std::size_t i = 0; i < count; ++i) out[i] += s[i];
    }
  };
  if (!workers_ || active_workers_ <= 1) {
    sum_local(values);
    return;
  }
  // Several workers: the first local replica adds the local values and exchanges the sum with the other workers.
  std::vector<T>& sum = result<T>();
  if (r == 0) {
    sum.resize(count);
    sum_local(sum.data());
    workers_->all_reduce_sum(sum.data(), count, active_workers_);
  }
  if (active_ > 1) barrier_.arrive_and_wait();
  std::copy(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(count), values);
}

void ReplicaGroup::all_reduce_sum(int r, double* values, std::size_t count) {
  all_reduce_host(r, values, count, Collective::sum_doubles);
}

template <class T>
void ReplicaGroup::all_reduce_device(int r, T* values, std::size_t count, Device device, Collective kind) {
  if (device.is_cpu()) return all_reduce_host(r, values, count, kind);
  if (in_sync_ <= 1) return;
  const auto ur = static_cast<std::size_t>(r);
  const std::size_t bytes = count * sizeof(T);
  if (workers_ && active_workers_ > 1) {
    // Between workers the communicator sums host memory: the values go there and back.
    std::vector<T>& host = host_staging<T>(r);
    host.resize(count);
    copy_bytes(host.data(), Device::cpu(), values, device, bytes);
    all_reduce_host(r, host.data(), count, kind);
    copy_bytes(values, device, host.data(), Device::cpu(), bytes);
    return;
  }
  if (active_ <= 1) return;
  device_parts_[ur] = {values, device};
  meet(r, kind, count);
  backend::Backend& be = backend::get(device);
  T* sum = static_cast<T*>(device_buffer(device_sums_[ur], bytes, device));
  bool other_gpus = false;
  for (int p = 0; p < active_; ++p) {
    const DevicePart& part = device_parts_[static_cast<std::size_t>(p)];
    const T* src = static_cast<const T*>(part.values);
    if (part.device != device) {
      // Another GPU's values: copied here first (the copy waits for that GPU's queued work).
      T* copy = static_cast<T*>(device_buffer(device_copies_[ur], bytes, device));
      copy_bytes(copy, device, src, part.device, bytes);
      src = copy;
      other_gpus = true;
    }
    if (p == 0)
      copy_bytes(sum, device, src, device, bytes);
    else if constexpr (std::is_same_v<T, double>)
      be.add_doubles(src, sum, static_cast<Index>(count));
    else
      be.add(sum, src, sum, static_cast<Index>(count));
  }
  if (other_gpus) {
    // The copies from the other GPUs must have read their values before those replicas go on and overwrite
    // them: reading one value back waits for this GPU's queue. (Replicas on one GPU share its one stream, which
    // orders their reads before the writes.)
    T first = 0;
    copy_bytes(&first, Device::cpu(), sum, device, sizeof(T));
  }
  barrier_.arrive_and_wait();
  copy_bytes(values, device, sum, device, bytes);
}

void ReplicaGroup::all_reduce_sum(int r, double* values, std::size_t count, Device device) {
  all_reduce_device(r, values, count, device, Collective::sum_doubles);
}

void ReplicaGroup::all_reduce_sum(int r, float* values, std::size_t count, Device device) {
  all_reduce_device(r, values, count, device, Collective::sum_floats);
}

void ReplicaGroup::merge_call(int r, const std::function<void()>& fn) {
  if (active_ <= 1) {
    fn();
    return;
  }
  meet(r, Collective::merge_call, 0);
  if (r == 0) {
    try {
      fn();
    } catch (...) {
      // The others wait below for a replica that will not come.
      barrier_.abort();
      throw;
    }
  }
  barrier_.arrive_and_wait();
}

}  // namespace tower::distribute::detail
