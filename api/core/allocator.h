#pragma once
// Device memory allocators. Every tensor's storage comes from the allocator of its device, a CachingAllocator
// that keeps freed blocks for reuse, so a training loop whose plan is fixed stops asking the device for memory
// after its first step. The counters let tests and benchmarks check exactly that.
//
// The caching logic is one class over an injected RawAllocator (the host's aligned_alloc, cudaMalloc on a GPU,
// or a test's fake), so the CPU tests prove the logic the GPU runs.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/core/device.h"

namespace tower {

struct AllocatorStats {
  std::uint64_t allocations = 0;         // every allocate() call, served from the cache or not
  std::uint64_t system_allocations = 0;  // allocate() calls that had to ask the raw allocator for memory
  std::size_t bytes_in_use = 0;          // held by live tensors (block sizes, after rounding)
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_cached = 0;          // freed blocks kept for reuse
  std::size_t bytes_reserved = 0;        // in use + cached: what the allocator holds from the device
  std::size_t peak_bytes_reserved = 0;
  std::size_t bytes_private = 0;         // of bytes_cached: freed blocks kept for a private pool (see below)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory aligned to kBufferAlignment (256 bytes, alignment.h) on every device, or throws OutOfMemory
  // naming the device and sizes.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  // Returns cached blocks to the system.
  virtual void empty_cache() = 0;
  virtual Device device() const = 0;
};

// Where a CachingAllocator gets its memory. allocate returns nullptr when the device has no memory left
// (it does not throw); free_bytes is what the device reports as free, for the out-of-memory message.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual std::size_t free_bytes() const = 0;
  virtual Device device() const = 0;
};

// Thrown when a device cannot give the memory asked for, even after the cache is returned to it:
// "out of memory on cuda:0: 512.0 MiB needed, 100.0 MiB free; tensors hold 1024.0 MiB".
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Size bins: small blocks round to the alignment, larger ones to 1/8 of their power of two, so a slightly
// smaller request (the last, short batch) reuses a block. Freed blocks wait in their bin; a request takes one
// from its bin or asks the raw allocator, and when that fails returns every cached block and asks once more.
// All work on one device is ordered on that device's one stream, so a block freed by one op can be handed to
// the next at once (PyTorch's per-stream reuse, with a single stream). Thread-safe.
//
// Private pools (PyTorch's graph pools) keep the memory of a captured CUDA graph apart: the graph replays with
// the addresses it was captured with, so no block it uses may ever serve another tensor. While a pool is open,
// the allocations of the thread that opened it are served from that pool's freed blocks or fresh from the raw
// allocator, never from the general cache; a block always returns to the pool that handed it out, whichever
// thread frees it and whether or not the pool is still open, so the general cache never sees a pool's block and
// a pool never takes one of the general cache's. Other threads allocate from the general cache meanwhile.
class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(std::unique_ptr<RawAllocator> raw, std::size_t alignment = 64);
  ~CachingAllocator() override;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;
  AllocatorStats stats() const override;
  void empty_cache() override;
  Device device() const override { return raw_->device(); }

  // The block size a request of `bytes` takes.
  std::size_t block_size(std::size_t bytes) const;

  // Opens a new private pool for the calling thread and returns its id (> 0). Throws std::logic_error while
  // another pool is open.
  int begin_private_pool();
  // Closes the open pool: its blocks stay reserved for it (freed ones wait in it, unused by anyone) until
  // release_private_pool. Throws std::logic_error when no pool is open or another thread opened it.
  void end_private_pool();
  // Hands the pool's freed blocks to the general cache; blocks of the pool still in use go there when freed.
  // Throws std::logic_error for an unknown pool or the open one.
  void release_private_pool(int id);
  // The pool the calling thread allocates from: its id, or 0 (the general cache).
  int current_pool() const;

 private:
  using Bins = std::map<std::size_t, std::vector<void*>>;
  struct PrivatePool {
    Bins free;
    std::size_t cached = 0;  // bytes in `free`
  };
  // Takes a block of `size` from `bins`, or null when the bin is empty.
  static void* take(Bins& bins, std::size_t size);
  void* allocate_raw_locked(std::size_t size);
  void release_cached_locked();

  std::unique_ptr<RawAllocator> raw_;
  std::size_t alignment_;
  mutable std::mutex mutex_;
  Bins free_;
  std::map<int, PrivatePool> pools_;
  std::unordered_map<void*, int> pool_of_;  // blocks handed out by a private pool, live or freed
  int open_pool_ = 0, last_pool_ = 0;
  std::thread::id open_thread_;
  AllocatorStats stats_;
};

// The process-wide allocator for a device. Thread-safe. Throws std::invalid_argument for a GPU this build or
// this machine does not have.
Allocator& allocator_for(Device device);

// While alive, caps the bytes of tensor storage the current thread may allocate in total (on any device); the
// allocation that would pass the cap throws std::runtime_error("<what>: ..." with both sizes) instead. For
// code that builds objects from a file's description (Model::load), so that a damaged description cannot make
// it allocate more than the file justifies. Limits nest; the innermost applies.
class AllocationLimit {
 public:
  AllocationLimit(std::size_t bytes, std::string what);
  ~AllocationLimit();
  AllocationLimit(const AllocationLimit&) = delete;
  AllocationLimit& operator=(const AllocationLimit&) = delete;
  std::size_t allocated() const { return allocated_; }

 private:
  friend void charge_allocation_limit(std::size_t bytes);
  std::size_t limit_, allocated_ = 0;
  std::string what_;
  AllocationLimit* outer_;
};

// Counts `bytes` against the current thread's AllocationLimit, if any (called by Storage before allocating).
void charge_allocation_limit(std::size_t bytes);

}  // namespace tower
