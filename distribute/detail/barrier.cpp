#include "distribute/detail/barrier.h"

#include <string>

namespace tower::distribute::detail {

namespace {

thread_local std::mutex* held_turn = nullptr;

// Gives the calling thread's turn up for the lifetime of the object.
class TurnYield {
 public:
  TurnYield() : turn_(held_turn) {
    if (turn_) turn_->unlock();
  }
  ~TurnYield() {
    if (turn_) turn_->lock();
  }
  TurnYield(const TurnYield&) = delete;
  TurnYield& operator=(const TurnYield&) = delete;

 private:
  std::mutex* turn_;
};

}  // namespace

Departed::Departed(int who)
    : std::logic_error("replica " + std::to_string(who) +
                       " finished its step while another replica waited for it at a collective call (an all-reduce "
                       "of Optimizer.apply_gradients or a synchronized BatchNormalization, a merge_call): every "
                       "replica of a step must make the same collective calls, in the same order") {}

TurnHold::TurnHold(std::mutex* turn) {
  if (turn) turn->lock();
  held_turn = turn;
}

TurnHold::~TurnHold() {
  if (held_turn) held_turn->unlock();
  held_turn = nullptr;
}

void Barrier::reset(int parties) {
  parties_ = parties;
  arrived_.store(0, std::memory_order_relaxed);
  departed_.store(false, std::memory_order_relaxed);
  departing_.store(false, std::memory_order_relaxed);
  departed_who_.store(-1, std::memory_order_relaxed);
  aborted_.store(false, std::memory_order_release);
}

void Barrier::arrive_and_wait() {
  if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  const std::uint32_t generation = generation_.load(std::memory_order_acquire);
  // A party that has finished never arrives: this barrier cannot complete. (Checked after reading the generation:
  // a departure that has not happened yet records this generation, which wakes the wait below.)
  if (departed_.load(std::memory_order_acquire)) throw Departed(departed_who_.load(std::memory_order_relaxed));
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    return;
  }
  const TurnYield yield;
  // Replicas usually arrive within microseconds of each other: spin a little before sleeping in the kernel.
  for (int spin = 0; spin < 2000; ++spin) {
    if (generation_.load(std::memory_order_acquire) != generation) break;
    if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  }
  while (generation_.load(std::memory_order_acquire) == generation)
    generation_.wait(generation, std::memory_order_acquire);
  if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  // Woken by a departure during this generation, not by the last arrival.
  if (departed_.load(std::memory_order_acquire) &&
      departed_generation_.load(std::memory_order_relaxed) == generation)
    throw Departed(departed_who_.load(std::memory_order_relaxed));
}

void Barrier::depart(int who) {
  // The first departure is the one reported; its generation is the one every waiter is stuck in.
  bool expected = false;
  if (!departing_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  departed_generation_.store(generation_.load(std::memory_order_acquire), std::memory_order_relaxed);
  departed_who_.store(who, std::memory_order_relaxed);
  departed_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
}

void Barrier::abort() {
  aborted_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
}

}  // namespace tower::distribute::detail
