#pragma once
// Host-to-device uploads that never make the host wait for the device's compute work. The bytes are copied into
// a ring of pinned (page-locked) host buffers, and each buffer's contents are sent by an asynchronous copy; the
// host waits only when it comes back to a buffer whose previous copy has not finished. A large upload goes
// through the ring in chunks, so the host fills one buffer while the device reads the previous one.
//
// The ring's logic is one class over injected StagingOps (the CUDA runtime on a GPU: pinned memory, a copy
// stream, one event per buffer; a fake in the tests), so the CPU tests prove the logic the GPU runs.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace tower {

class StagingOps {
 public:
  virtual ~StagingOps() = default;
  // Page-locked host memory of `bytes` (throws when the host has none), and its release.
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(void* ptr) = 0;
  // Once per upload, before its first chunk: the copies that follow come after the device work queued so far
  // (which may still be reading the destination) or, when `after` is not null, after the work that marker (a
  // WorkMarker's handle: an event on the compute stream) marked, and no later work.
  virtual void begin_upload(const void* after) = 0;
  // Returns once the last copy out of buffer `slot` has finished, so the host may overwrite it.
  virtual void wait(int slot) = 0;
  // Queues the copy of `bytes` from pinned buffer `slot` (at `pinned`) to device memory `dst`; device work queued
  // after it sees the bytes.
  virtual void copy(void* dst, const void* pinned, std::size_t bytes, int slot) = 0;
};

class StagingRing {
 public:
  // `slots` buffers of `slot_bytes` each, allocated on first use.
  StagingRing(std::unique_ptr<StagingOps> ops, int slots, std::size_t slot_bytes);
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Queues the upload of `bytes` from host memory `src` (any memory; it may change once this returns) to device
  // memory `dst`, after the device work queued so far, or only after the work marked by `after` (see
  // StagingOps::begin_upload). Thread-safe.
  void upload(void* dst, const void* src, std::size_t bytes, const void* after = nullptr);

  int slots() const { return static_cast<int>(buffers_.size()); }
  std::size_t slot_bytes() const { return slot_bytes_; }

 private:
  std::unique_ptr<StagingOps> ops_;
  std::size_t slot_bytes_;
  std::vector<void*> buffers_;
  int next_ = 0;
  std::mutex mutex_;
};

}  // namespace tower
