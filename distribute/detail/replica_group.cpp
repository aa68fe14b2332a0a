#include "distribute/detail/replica_group.h"

#include <algorithm>

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

 private:
  ReplicaGroup& group_;
  int local_;
};

ReplicaGroup::ReplicaGroup(int local, std::shared_ptr<Communicator> workers)
    : local_(local), workers_(std::move(workers)), parity_(static_cast<std::size_t>(local), 0) {
  for (int r = 0; r < local; ++r) contexts_.push_back(std::make_unique<Context>(*this, r));
  for (auto& generation : slots_) generation.resize(static_cast<std::size_t>(local));
  device_parts_.resize(static_cast<std::size_t>(local));
  device_sums_.resize(static_cast<std::size_t>(local));
  device_copies_.resize(static_cast<std::size_t>(local));
  host_staging_.resize(static_cast<std::size_t>(local));
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

void ReplicaGroup::all_reduce_sum(int r, double* values, std::size_t count) {
  if (in_sync_ <= 1) return;
  int& parity = parity_[static_cast<std::size_t>(r)];
  std::vector<std::vector<double>>& slots = slots_[parity];
  parity ^= 1;
  if (active_ > 1) {
    slots[static_cast<std::size_t>(r)].assign(values, values + count);
    barrier_.arrive_and_wait();
  } else {
    slots[0].assign(values, values + count);
  }
  const auto sum_local = [&](double* out) {
    std::copy(slots[0].begin(), slots[0].end(), out);
    for (int k = 1; k < active_; ++k) {
      const std::vector<double>& s = slots[static_cast<std::size_t>(k)];
      for (std::size_t i = 0; i < count; ++i) out[i] += s[i];
    }
  };
  if (!workers_ || active_workers_ <= 1) {
    sum_local(values);
    return;
  }
  // Several workers: the first local replica adds the local values and exchanges the sum with the other workers.
  if (r == 0) {
    result_.resize(count);
    sum_local(result_.data());
    workers_->all_reduce_sum(result_.data(), count, active_workers_);
  }
  if (active_ > 1) barrier_.arrive_and_wait();
  std::copy(result_.begin(), result_.begin() + static_cast<std::ptrdiff_t>(count), values);
}

namespace {
// `buffer` as at least `bytes` bytes of `device`.
double* device_buffer(std::shared_ptr<Storage>& buffer, std::size_t bytes, Device device) {
  if (!buffer || buffer->bytes() < bytes || buffer->device() != device)
    buffer = std::make_shared<Storage>(std::max<std::size_t>(bytes, sizeof(double)), device);
  return static_cast<double*>(buffer->data());
}
}  // namespace

void ReplicaGroup::all_reduce_sum(int r, double* values, std::size_t count, Device device) {
  if (device.is_cpu()) return all_reduce_sum(r, values, count);
  if (in_sync_ <= 1) return;
  const auto ur = static_cast<std::size_t>(r);
  const std::size_t bytes = count * sizeof(double);
  if (workers_ && active_workers_ > 1) {
    // Between workers the communicator sums host memory: the values go there and back.
    std::vector<double>& host = host_staging_[ur];
    host.resize(count);
    copy_bytes(host.data(), Device::cpu(), values, device, bytes);
    all_reduce_sum(r, host.data(), count);
    copy_bytes(values, device, host.data(), Device::cpu(), bytes);
    return;
  }
  if (active_ <= 1) return;
  device_parts_[ur] = {values, device};
  barrier_.arrive_and_wait();
  backend::Backend& be = backend::get(device);
  double* sum = device_buffer(device_sums_[ur], bytes, device);
  bool other_gpus = false;
  for (int p = 0; p < active_; ++p) {
    const DevicePart& part = device_parts_[static_cast<std::size_t>(p)];
    const double* src = part.values;
    if (part.device != device) {
      // Another GPU's values: copied here first (the copy waits for that GPU's queued work).
      double* copy = device_buffer(device_copies_[ur], bytes, device);
      copy_bytes(copy, device, src, part.device, bytes);
      src = copy;
      other_gpus = true;
    }
    if (p == 0)
      copy_bytes(sum, device, src, device, bytes);
    else
      be.add_doubles(src, sum, static_cast<Index>(count));
  }
  if (other_gpus) {
    // The copies from the other GPUs must have read their values before those replicas go on and overwrite
    // them: reading one value back waits for this GPU's queue. (Replicas on one GPU share its one stream, which
    // orders their reads before the writes.)
    double first = 0;
    copy_bytes(&first, Device::cpu(), sum, device, sizeof(double));
  }
  barrier_.arrive_and_wait();
  copy_bytes(values, device, sum, device, bytes);
}

}  // namespace tower::distribute::detail

