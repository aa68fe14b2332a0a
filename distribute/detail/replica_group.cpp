#include "distribute/detail/replica_group.h"

#include <algorithm>

namespace tower::distribute::detail {

class ReplicaGroup::Context final : public ReplicaContext {
 public:
  Context(ReplicaGroup& group, int local) : group_(group), local_(local) {}
  int num_replicas_in_sync() const override { return group_.in_sync_; }
  int replica_id_in_sync_group() const override {
    return (group_.workers_ ? group_.workers_->rank() * group_.local_ : 0) + local_;
  }
  void all_reduce_sum(double* values, std::size_t count) override { group_.all_reduce_sum(local_, values, count); }

 private:
  ReplicaGroup& group_;
  int local_;
};

ReplicaGroup::ReplicaGroup(int local, std::shared_ptr<Communicator> workers)
    : local_(local), workers_(std::move(workers)), parity_(static_cast<std::size_t>(local), 0) {
  for (int r = 0; r < local; ++r) contexts_.push_back(std::make_unique<Context>(*this, r));
  for (auto& generation : slots_) generation.resize(static_cast<std::size_t>(local));
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

}  // namespace tower::distribute::detail
