// Turns: replica threads sharing one GPU hold its turn while they work and give it up while they wait at a
// barrier, so they never work at the same time and never deadlock at a barrier; an abort still reaches them.
#include "distribute/detail/barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tower::distribute::detail {
namespace {

TEST(Barrier, ThreadsTakingTurnsMeetAtBarriersOneAtATime) {
  const int k = 4, rounds = 50;
  Barrier barrier;
  barrier.reset(k);
  std::mutex turn;
  std::atomic<int> working{0}, most{0}, passed{0};
  const auto work = [&] {
    const int now = working.fetch_add(1) + 1;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::yield();
    working.fetch_sub(1);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&] {
      const TurnHold hold(&turn);
      for (int i = 0; i < rounds; ++i) {
        work();
        barrier.arrive_and_wait();  // gives the turn up while waiting, or every other thread would block on it
        passed.fetch_add(1);
        work();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(passed.load(), k * rounds);
  EXPECT_EQ(most.load(), 1) << "two threads held the turn at once";
  // The turn is free again.
  EXPECT_TRUE(turn.try_lock());
  turn.unlock();
}

TEST(Barrier, AnAbortReachesAThreadThatGaveItsTurnUp) {
  Barrier barrier;
  barrier.reset(2);
  std::mutex turn;
  std::atomic<bool> aborted{false};
  std::thread waiter([&] {
    const TurnHold hold(&turn);
    try {
      barrier.arrive_and_wait();
    } catch (const Aborted&) {
      aborted = true;
    }
  });
  {
    // The turn is free whether the waiter has not started yet or waits at the barrier (it gave the turn up there).
    const TurnHold hold(&turn);
    barrier.abort();
  }
  waiter.join();
  EXPECT_TRUE(aborted.load());
  EXPECT_TRUE(turn.try_lock());
  turn.unlock();
  const TurnHold none(nullptr);  // replicas with a device of their own hold nothing
  barrier.reset(1);
  EXPECT_NO_THROW(barrier.arrive_and_wait());
}

// A party that finishes its step (depart) while another waits for it at the barrier ends that wait with Departed
// naming it; later arrivals throw at once; a barrier that completed before the departure is not affected.
TEST(Barrier, ADepartureEndsAWaitForTheDepartedParty) {
  Barrier barrier;
  barrier.reset(2);
  std::thread partner([&] { barrier.arrive_and_wait(); });
  barrier.arrive_and_wait();  // both met
  partner.join();
  std::string message;
  std::thread waiter([&] {
    try {
      barrier.arrive_and_wait();
    } catch (const Departed& e) {
      message = e.what();
    }
  });
  barrier.depart(1);
  waiter.join();
  EXPECT_NE(message.find("replica 1 finished its step"), std::string::npos) << message;
  EXPECT_THROW(barrier.arrive_and_wait(), Departed);
  barrier.reset(1);
  EXPECT_NO_THROW(barrier.arrive_and_wait());
}

}  // namespace
}  // namespace tower::distribute::detail
