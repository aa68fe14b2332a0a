#pragma once
// One long-lived thread per local replica. run() hands every thread the same step and returns when all have
// finished it; nothing is allocated per step.
//
// OpenMP: each thread sets its own OpenMP thread count (omp_set_num_threads is per thread) to
// `omp_threads_each`, so N replicas with T threads each use N * T cores; a strategy gives each replica
// backend::num_threads() / N, at least 1, so replicas do not oversubscribe the cores (see bench/distribute.cpp).
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace tower::distribute::detail {

class ReplicaThreads {
 public:
  // Starts `count` threads; body(r) is what thread r runs at each run(). body must not throw.
  ReplicaThreads(int count, int omp_threads_each, std::function<void(int)> body);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  int omp_threads_each() const { return omp_threads_each_; }
  // Runs body(r) on thread r for every r, in parallel; returns when all have returned.
  void run();

 private:
  void loop(int r);

  int omp_threads_each_;
  std::function<void(int)> body_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace tower::distribute::detail
