#include "api/core/allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tower {
namespace {

constexpr std::size_t kAlignment = 64;

std::size_t round_up(std::size_t bytes) {
  // Small blocks round to the alignment, larger ones to 1/8 of their power of two, so a slightly smaller
  // request (the last, short batch) can reuse a block.
  if (bytes <= 4096) return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  std::size_t p = 4096;
  while (p * 2 <= bytes) p *= 2;
  const std::size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

class CpuCachingAllocator final : public Allocator {
 public:
  ~CpuCachingAllocator() override { empty_cache(); }

  void* allocate(std::size_t bytes) override {
    const std::size_t size = round_up(bytes == 0 ? 1 : bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.allocations;
    void* ptr = nullptr;
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= size;
    } else {
      ptr = std::aligned_alloc(kAlignment, size);
      if (!ptr) {
        release_cached_locked();
        ptr = std::aligned_alloc(kAlignment, size);
      }
      if (!ptr) throw std::bad_alloc();
      ++stats_.system_allocations;
    }
    stats_.bytes_in_use += size;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return ptr;
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    if (!ptr) return;
    const std::size_t size = round_up(bytes == 0 ? 1 : bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_in_use -= size;
    stats_.bytes_cached += size;
    free_[size].push_back(ptr);
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

  Device device() const override { return Device::cpu(); }

 private:
  void release_cached_locked() {
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    stats_.bytes_cached = 0;
  }

  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

}  // namespace

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CpuCachingAllocator cpu;
    return cpu;
  }
  throw std::invalid_argument("no allocator for device " + device.to_string() +
                              ": this build of Tower has no CUDA backend");
}

namespace {
thread_local AllocationLimit* current_limit = nullptr;
}  // namespace

AllocationLimit::AllocationLimit(std::size_t bytes, std::string what)
    : limit_(bytes), what_(std::move(what)), outer_(current_limit) {
  current_limit = this;
}

AllocationLimit::~AllocationLimit() { current_limit = outer_; }

void charge_allocation_limit(std::size_t bytes) {
  AllocationLimit* limit = current_limit;
  if (!limit) return;
  if (bytes > limit->limit_ - limit->allocated_)
    throw std::runtime_error(limit->what_ + ": it would allocate " + std::to_string(limit->allocated_ + bytes) +
                             " bytes of tensors, more than the " + std::to_string(limit->limit_) + " allowed");
  limit->allocated_ += bytes;
}

}  // namespace tower
