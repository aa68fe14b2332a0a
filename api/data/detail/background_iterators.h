#pragma once
// The iterators of Dataset that run work on threads of their own: a parallel map and a prefetch queue.
// Both start their threads in the constructor and stop and join them in the destructor, whether or not the
// input was exhausted; a thread blocked inside the input or the map function finishes that call first.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "api/data/dataset.h"

namespace tower::data::detail {

// Applies fn on `threads` workers and returns results in input order. At most 2 * threads elements are in
// flight or waiting, so a slow consumer bounds memory.
class ParallelMapIterator : public Iterator {
 public:
  ParallelMapIterator(std::unique_ptr<Iterator> input, Dataset::MapFn fn, int threads);
  ~ParallelMapIterator() override;
  std::optional<Element> next() override;

 private:
  struct Result {
    Element value;
    std::exception_ptr error;
  };
  void work();
  void stop_workers();

  std::unique_ptr<Iterator> input_;
  Dataset::MapFn fn_;
  const Index window_;

  std::mutex input_mutex_;  // serialises reads of input_ together with the numbering of what they return
  std::mutex mutex_;        // guards everything below
  std::condition_variable space_;  // a worker may take more input
  std::condition_variable ready_;  // a result (or the end) arrived
  std::map<Index, Result> results_;
  Index taken_ = 0;      // input elements numbered so far
  Index emitted_ = 0;    // results handed to the consumer
  bool input_done_ = false;
  Index input_end_ = 0;  // the number of input elements when input_done_
  std::exception_ptr input_error_;
  bool stopping_ = false;
  bool finished_ = false;  // next() returned the end or an error
  std::vector<std::thread> workers_;
};

// Fills a queue of up to `capacity` elements from a background thread.
class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, int capacity);
  ~PrefetchIterator() override;
  std::optional<Element> next() override;

 private:
  void produce();

  std::unique_ptr<Iterator> input_;
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable space_;
  std::condition_variable ready_;
  std::deque<Element> queue_;
  bool input_done_ = false;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread producer_;
};

}  // namespace tower::data::detail
