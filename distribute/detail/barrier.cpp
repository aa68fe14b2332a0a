#include "distribute/detail/barrier.h"

namespace tower::distribute::detail {

void Barrier::reset(int parties) {
  parties_ = parties;
  arrived_.store(0, std::memory_order_relaxed);
  aborted_.store(false, std::memory_order_release);
}

void Barrier::arrive_and_wait() {
  if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  const std::uint32_t generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    return;
  }
  // Replicas usually arrive within microseconds of each other: spin a little before sleeping in the kernel.
  for (int spin = 0; spin < 2000; ++spin) {
    if (generation_.load(std::memory_order_acquire) != generation) break;
    if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  }
  while (generation_.load(std::memory_order_acquire) == generation)
    generation_.wait(generation, std::memory_order_acquire);
  if (aborted_.load(std::memory_order_acquire)) throw Aborted();
}

void Barrier::abort() {
  aborted_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
}

}  // namespace tower::distribute::detail
