#pragma once
// Device memory allocators. Every tensor's storage comes from the allocator of its device, which keeps freed
// blocks for reuse, so a training loop whose plan is fixed stops touching the system allocator after its
// first step. The counters let tests and benchmarks check exactly that.
#include <cstddef>
#include <cstdint>

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

}  // namespace tower
