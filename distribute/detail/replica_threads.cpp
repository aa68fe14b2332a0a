#include "distribute/detail/replica_threads.h"

#include <omp.h>

namespace tower::distribute::detail {

ReplicaThreads::ReplicaThreads(int count, int omp_threads_each, std::function<void(int)> body)
    : omp_threads_each_(omp_threads_each), body_(std::move(body)) {
  threads_.reserve(static_cast<std::size_t>(count));
  for (int r = 0; r < count; ++r) threads_.emplace_back([this, r] { loop(r); });
}

ReplicaThreads::~ReplicaThreads() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplicaThreads::run() {
  remaining_.store(size(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (int left = remaining_.load(std::memory_order_acquire); left != 0;
       left = remaining_.load(std::memory_order_acquire))
    remaining_.wait(left, std::memory_order_acquire);
}

void ReplicaThreads::loop(int r) {
  omp_set_num_threads(omp_threads_each_);
  std::uint64_t seen = 0;
  while (true) {
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    body_(r);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_all();
  }
}

}  // namespace tower::distribute::detail
