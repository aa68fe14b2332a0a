#include "api/data/detail/background_iterators.h"

namespace tower::data::detail {

ParallelMapIterator::ParallelMapIterator(std::unique_ptr<Iterator> input, Dataset::MapFn fn, int threads)
    : input_(std::move(input)), fn_(std::move(fn)), window_(2 * static_cast<Index>(threads)) {
  workers_.reserve(threads);
  try {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    stop_workers();
    throw;
  }
}

ParallelMapIterator::~ParallelMapIterator() { stop_workers(); }

void ParallelMapIterator::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  space_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
}

void ParallelMapIterator::work() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      space_.wait(lock, [this] { return stopping_ || input_done_ || taken_ - emitted_ < window_; });
      if (stopping_ || input_done_) return;
    }
    std::optional<Element> input;
    Index index = 0;
    {
      std::lock_guard<std::mutex> input_lock(input_mutex_);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || input_done_) return;
      }
      std::exception_ptr error;
      try {
        input = input_->next();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!input) {
        input_done_ = true;
        input_end_ = taken_;
        input_error_ = std::move(error);
        ready_.notify_all();
        space_.notify_all();
        return;
      }
      index = taken_++;
    }
    Result result;
    try {
      result.value = fn_(*input);
    } catch (...) {
      result.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      results_.emplace(index, std::move(result));
    }
    ready_.notify_all();
  }
}

std::optional<Element> ParallelMapIterator::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_) return std::nullopt;
  ready_.wait(lock, [this] { return results_.count(emitted_) > 0 || (input_done_ && emitted_ >= input_end_); });
  auto it = results_.find(emitted_);
  if (it == results_.end()) {
    finished_ = true;
    std::exception_ptr error = input_error_;
    lock.unlock();
    stop_workers();
    if (error) std::rethrow_exception(error);
    return std::nullopt;
  }
  Result result = std::move(it->second);
  results_.erase(it);
  ++emitted_;
  if (result.error) {
    finished_ = true;
    lock.unlock();
    stop_workers();
    std::rethrow_exception(result.error);
  }
  lock.unlock();
  space_.notify_all();
  return std::move(result.value);
}

PrefetchIterator::PrefetchIterator(std::unique_ptr<Iterator> input, int capacity)
    : input_(std::move(input)), capacity_(static_cast<std::size_t>(capacity)) {
  producer_ = std::thread([this] { produce(); });
}

PrefetchIterator::~PrefetchIterator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  space_.notify_all();
  producer_.join();
}

void PrefetchIterator::produce() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      space_.wait(lock, [this] { return stopping_ || queue_.size() < capacity_; });
      if (stopping_) return;
    }
    std::optional<Element> element;
    std::exception_ptr error;
    try {
      element = input_->next();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (element) {
        queue_.push_back(std::move(*element));
      } else {
        input_done_ = true;
        error_ = std::move(error);  // the consumer alone owns the exception from here on
      }
    }
    ready_.notify_one();
    if (!element) return;
  }
}

std::optional<Element> PrefetchIterator::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [this] { return !queue_.empty() || input_done_; });
  if (queue_.empty()) {
    std::exception_ptr error = std::exchange(error_, nullptr);
    if (error) std::rethrow_exception(error);
    return std::nullopt;
  }
  Element element = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  space_.notify_one();
  return element;
}

}  // namespace tower::data::detail
