#include <algorithm>
#include <stdexcept>
#include <string>

#include "distribute/detail/device_communicator.h"

namespace tower::distribute::detail {

InProcessCommunicator::InProcessCommunicator(int size) : size_(size) {
  if (size < 1) throw std::invalid_argument("InProcessCommunicator: size must be >= 1, got " + std::to_string(size));
  sequence_.assign(static_cast<std::size_t>(size), 0);
}

std::size_t InProcessCommunicator::arrive(int local, const float* send, float* receive, std::size_t count) {
  if (local < 0 || local >= size_)
    throw std::logic_error("InProcessCommunicator: rank " + std::to_string(local) + " of " + std::to_string(size_));
  const std::size_t key = sequence_[static_cast<std::size_t>(local)]++;
  calls_.push_back({local, key, send, receive, count});
  Pending& p = pending_[key];
  if (p.sends.empty()) {
    p.sends.assign(static_cast<std::size_t>(size_), nullptr);
    p.receives.assign(static_cast<std::size_t>(size_), nullptr);
    p.counts.assign(static_cast<std::size_t>(size_), 0);
  }
  p.sends[static_cast<std::size_t>(local)] = send;
  p.receives[static_cast<std::size_t>(local)] = receive;
  p.counts[static_cast<std::size_t>(local)] = count;
  if (++p.arrived < size_) return key;
  for (int r = 1; r < size_ && p.error.empty(); ++r)
    if (p.counts[static_cast<std::size_t>(r)] != p.counts[0])
      p.error = "InProcessCommunicator: all-reduce " + std::to_string(key) + " has " + std::to_string(p.counts[0]) +
                " values on rank 0 and " + std::to_string(p.counts[static_cast<std::size_t>(r)]) + " on rank " +
                std::to_string(r) + "; every rank must make the same calls";
  if (p.error.empty()) {
    // Every send is read before any receive is written: a rank may receive in place.
    std::vector<float> sum(p.sends[0], p.sends[0] + count);
    for (int r = 1; r < size_; ++r) {
      const float* part = p.sends[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < count; ++i) sum[i] += part[i];
    }
    for (float* out : p.receives) std::copy(sum.begin(), sum.end(), out);
  }
  p.done = true;
  done_.notify_all();
  return key;
}

void InProcessCommunicator::wait(std::size_t key) {
  std::unique_lock<std::mutex> lock(mutex_);
  Pending& p = pending_.at(key);
  done_.wait(lock, [&] { return p.done; });
  const std::string error = p.error;
  if (++p.left == size_) pending_.erase(key);
  if (!error.empty()) throw std::logic_error(error);
}

void InProcessCommunicator::all_reduce_sum(int local, const float* send, float* receive, std::size_t count) {
  std::size_t key = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    key = arrive(local, send, receive, count);
    auto group = groups_.find(std::this_thread::get_id());
    if (group != groups_.end()) {
      group->second.keys.push_back(key);
      return;
    }
  }
  wait(key);
}

void InProcessCommunicator::group_start() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++groups_[std::this_thread::get_id()].depth;
}

void InProcessCommunicator::group_end() {
  std::vector<std::size_t> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto group = groups_.find(std::this_thread::get_id());
    if (group == groups_.end()) throw std::logic_error("InProcessCommunicator: group_end() without group_start()");
    if (--group->second.depth > 0) return;
    keys = std::move(group->second.keys);
    groups_.erase(group);
  }
  for (std::size_t key : keys) wait(key);
}

std::vector<InProcessCommunicator::Call> InProcessCommunicator::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

}  // namespace tower::distribute::detail
