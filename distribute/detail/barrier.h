#pragma once
// A reusable barrier for the replica threads of one step, which a failing replica can abort so that the others,
// waiting for it inside a collective, throw instead of waiting forever. Allocation-free.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>

namespace tower::distribute::detail {

// Thrown by Barrier::arrive_and_wait once the barrier is aborted: the step failed elsewhere.
class Aborted : public std::runtime_error {
 public:
  Aborted() : std::runtime_error("the step was aborted because another replica failed") {}
};

// Thrown by Barrier::arrive_and_wait when a party has finished its step (Barrier::depart) while this one waits for
// it, or before this one arrives: the replicas did not make the same collective calls.
class Departed : public std::logic_error {
 public:
  explicit Departed(int who);
};

// A turn: a lock that the replica threads sharing one physical GPU take in turn while they issue work to it (the
// GPU's backend, its library handles, workspace and plan caches, serves one host thread at a time; the GPU runs
// one stream anyway, so turns cost only host-side overlap). While a TurnHold lives, its thread holds the turn,
// except while it waits in Barrier::arrive_and_wait, which gives the turn up during the wait so that the other
// replicas can reach the barrier. A null lock holds nothing (replicas with a device of their own).
class TurnHold {
 public:
  explicit TurnHold(std::mutex* turn);
  ~TurnHold();
  TurnHold(const TurnHold&) = delete;
  TurnHold& operator=(const TurnHold&) = delete;
};

class Barrier {
 public:
  // Sets the number of threads that meet at the barrier and clears an abort. Requires no thread waiting.
  void reset(int parties);
  int parties() const { return parties_; }
  // Returns once `parties` threads have arrived (the barrier then resets itself for the next use). Throws
  // Aborted if the barrier is or becomes aborted. A waiting thread gives up its TurnHold's turn while it waits.
  void arrive_and_wait();
  // Wakes every waiting thread with Aborted, and makes every later arrival throw it until reset().
  void abort();
  // Party `who` has finished its step and will not arrive again before reset(): a thread waiting for it at the
  // barrier, and every later arrival, throws Departed naming it instead of waiting forever. Requires that the
  // calling thread is not waiting at the barrier.
  void depart(int who);

 private:
  int parties_ = 1;
  std::atomic<int> arrived_{0};
  std::atomic<std::uint32_t> generation_{0};
  std::atomic<bool> aborted_{false};
  // The first departure of the step: who, and the generation it left in (a thread waiting in that generation
  // waits for it).
  std::atomic<bool> departing_{false}, departed_{false};
  std::atomic<std::uint32_t> departed_generation_{0};
  std::atomic<int> departed_who_{-1};
};

}  // namespace tower::distribute::detail
