#include "api/core/staging.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tower {

StagingRing::StagingRing(std::unique_ptr<StagingOps> ops, int slots, std::size_t slot_bytes)
    : ops_(std::move(ops)), slot_bytes_(slot_bytes) {
  if (!ops_ || slots < 1 || slot_bytes == 0)
    throw std::invalid_argument("StagingRing: needs ops, at least one slot and a slot size, got " +
                                std::to_string(slots) + " slots of " + std::to_string(slot_bytes) + " bytes");
  buffers_.assign(static_cast<std::size_t>(slots), nullptr);
}

StagingRing::~StagingRing() {
  for (std::size_t s = 0; s < buffers_.size(); ++s)
    if (buffers_[s]) {
      ops_->wait(static_cast<int>(s));
      ops_->free_pinned(buffers_[s]);
    }
}

void StagingRing::upload(void* dst, const void* src, std::size_t bytes, const void* after) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ops_->begin_upload(after);
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  for (std::size_t done = 0; done < bytes;) {
    const int slot = next_;
    next_ = (next_ + 1) % slots();
    void*& buffer = buffers_[static_cast<std::size_t>(slot)];
    if (buffer) ops_->wait(slot);
    else buffer = ops_->allocate_pinned(slot_bytes_);
    const std::size_t n = std::min(slot_bytes_, bytes - done);
    std::memcpy(buffer, in + done, n);
    ops_->copy(out + done, buffer, n, slot);
    done += n;
  }
}

}  // namespace tower
