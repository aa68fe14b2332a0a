#pragma once
// Device memory allocators. Every tensor's storage comes from the allocator of its device, which keeps freed
// blocks for reuse, so a training loop whose plan is fixed stops touching the system allocator after its
// first step. The counters let tests and benchmarks check exactly that.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/core/device.h"

namespace tower {

struct AllocatorStats {
  std::uint64_t allocations = 0;         // every allocate() call, served from the cache or not
  std::uint64_t system_allocations = 0;  // allocate() calls that had to ask the system for memory
  std::size_t bytes_in_use = 0;
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_cached = 0;          // freed blocks kept for reuse
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory aligned to 64 bytes, or throws std::bad_alloc with the size in the message.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  // Returns cached blocks to the system.
  virtual void empty_cache() = 0;
  virtual Device device() const = 0;
};

// The process-wide allocator for a device. Thread-safe.
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
