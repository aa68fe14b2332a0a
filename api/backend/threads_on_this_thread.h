#pragma once
// The CPU kernels' threads for one calling thread (backend::num_threads() sets the count every thread starts with).

namespace tower::backend {

// The CPU kernels run on `n` threads (1: the calling thread alone) while this lives on the calling thread, then as
// before: an inference call sets its own thread's count, whichever thread calls. Throws std::invalid_argument for
// n < 1.
class ThreadsOnThisThread {
 public:
  explicit ThreadsOnThisThread(int n);
  ~ThreadsOnThisThread();
  ThreadsOnThisThread(const ThreadsOnThisThread&) = delete;
  ThreadsOnThisThread& operator=(const ThreadsOnThisThread&) = delete;

 private:
  int previous_;
};

}  // namespace tower::backend
