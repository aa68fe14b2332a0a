#include "api/core/allocator.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/core/alignment.h"

#ifdef TOWER_WITH_CUDA
#include "api/core/cuda/cuda_device.h"
#endif

namespace tower {
namespace {

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

class HostRawAllocator final : public RawAllocator {
 public:
  void* allocate(std::size_t bytes) override { return std::aligned_alloc(kBufferAlignment, align_bytes(bytes)); }
  void deallocate(void* ptr, std::size_t) override { std::free(ptr); }
  std::size_t free_bytes() const override {
    return static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  }
  Device device() const override { return Device::cpu(); }
};

}  // namespace

CachingAllocator::CachingAllocator(std::unique_ptr<RawAllocator> raw, std::size_t alignment)
    : raw_(std::move(raw)), alignment_(alignment) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
  for (auto& [id, pool] : pools_)
    for (auto& [size, blocks] : pool.free)
      for (void* p : blocks) raw_->deallocate(p, size);
}

std::size_t CachingAllocator::block_size(std::size_t bytes) const {
  if (bytes == 0) bytes = 1;
  if (bytes <= 4096) return (bytes + alignment_ - 1) / alignment_ * alignment_;
  std::size_t p = 4096;
  while (p * 2 <= bytes) p *= 2;
  const std::size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::take(Bins& bins, std::size_t size) {
  auto it = bins.find(size);
  if (it == bins.end() || it->second.empty()) return nullptr;
  void* ptr = it->second.back();
  it->second.pop_back();
  return ptr;
}

void* CachingAllocator::allocate_raw_locked(std::size_t size) {
  void* ptr = raw_->allocate(size);
  if (!ptr) {
    release_cached_locked();
    ptr = raw_->allocate(size);
  }
  if (!ptr)
    throw OutOfMemory("out of memory on " + raw_->device().to_string() + ": " + mib(size) + " needed, " +
                      mib(raw_->free_bytes()) + " free; tensors hold " + mib(stats_.bytes_in_use));
  ++stats_.system_allocations;
  stats_.bytes_reserved += size;
  if (stats_.bytes_reserved > stats_.peak_bytes_reserved) stats_.peak_bytes_reserved = stats_.bytes_reserved;
  return ptr;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = block_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  void* ptr = nullptr;
  if (open_pool_ && std::this_thread::get_id() == open_thread_) {
    PrivatePool& pool = pools_.at(open_pool_);
    ptr = take(pool.free, size);
    if (ptr) {
      pool.cached -= size;
      stats_.bytes_cached -= size;
      stats_.bytes_private -= size;
    } else {
      ptr = allocate_raw_locked(size);
      pool_of_[ptr] = open_pool_;
    }
  } else {
    ptr = take(free_, size);
    if (ptr) stats_.bytes_cached -= size;
    else ptr = allocate_raw_locked(size);
  }
  stats_.bytes_in_use += size;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, std::size_t bytes) {
  if (!ptr) return;
  const std::size_t size = block_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= size;
  stats_.bytes_cached += size;
  if (!pool_of_.empty()) {
    auto owner = pool_of_.find(ptr);
    if (owner != pool_of_.end()) {
      auto pool = pools_.find(owner->second);
      if (pool != pools_.end()) {
        pool->second.free[size].push_back(ptr);
        pool->second.cached += size;
        stats_.bytes_private += size;
        return;
      }
      pool_of_.erase(owner);  // its pool was released: the block joins the general cache
    }
  }
  free_[size].push_back(ptr);
}

int CachingAllocator::begin_private_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_pool_)
    throw std::logic_error("CachingAllocator on " + raw_->device().to_string() + ": private pool " +
                           std::to_string(open_pool_) + " is still open; end it before beginning another");
  open_pool_ = ++last_pool_;
  open_thread_ = std::this_thread::get_id();
  pools_[open_pool_];
  return open_pool_;
}

void CachingAllocator::end_private_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_pool_)
    throw std::logic_error("CachingAllocator on " + raw_->device().to_string() + ": no private pool is open");
  if (std::this_thread::get_id() != open_thread_)
    throw std::logic_error("CachingAllocator on " + raw_->device().to_string() + ": private pool " +
                           std::to_string(open_pool_) + " was opened by another thread");
  open_pool_ = 0;
  open_thread_ = std::thread::id();
}

void CachingAllocator::release_private_pool(int id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id == open_pool_)
    throw std::logic_error("CachingAllocator on " + raw_->device().to_string() + ": private pool " +
                           std::to_string(id) + " is open; end it before releasing it");
  auto pool = pools_.find(id);
  if (pool == pools_.end())
    throw std::logic_error("CachingAllocator on " + raw_->device().to_string() + ": no private pool " +
                           std::to_string(id));
  for (auto& [size, blocks] : pool->second.free)
    for (void* p : blocks) {
      pool_of_.erase(p);
      free_[size].push_back(p);
    }
  stats_.bytes_private -= pool->second.cached;
  pools_.erase(pool);
}

int CachingAllocator::current_pool() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_pool_ && std::this_thread::get_id() == open_thread_ ? open_pool_ : 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  // Only the general cache: a private pool's freed blocks stay reserved for its graph.
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) {
      raw_->deallocate(p, size);
      stats_.bytes_reserved -= size;
      stats_.bytes_cached -= size;
    }
  free_.clear();
}

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CachingAllocator cpu(std::make_unique<HostRawAllocator>(), kBufferAlignment);
    return cpu;
  }
#ifdef TOWER_WITH_CUDA
  return cuda::allocator(device.index);
#else
  throw std::invalid_argument("no allocator for device " + device.to_string() +
                              ": this build of Tower has no CUDA backend");
#endif
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
