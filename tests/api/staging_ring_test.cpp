// The staging ring's logic over a fake runtime: every byte arrives, a buffer is reused only after its last copy
// was waited for, large uploads go in chunks through the buffers in turn, and each upload first orders itself
// after the device's queued work. CUDA's runtime underneath (cudaHostAlloc, a copy stream, events) is exercised
// by the GPU suite (`*_CUDA`) through every host-to-device copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "api/core/staging.h"

namespace tower {
namespace {

struct Journal {
  std::vector<std::string> events;
  int pinned_live = 0;
  int pinned_allocations = 0;
};

// Copies at once (the "device" is host memory) and writes down every call.
class FakeOps final : public StagingOps {
 public:
  explicit FakeOps(Journal& j) : j_(j) {}
  void* allocate_pinned(std::size_t bytes) override {
    ++j_.pinned_live;
    ++j_.pinned_allocations;
    return ::operator new(bytes);
  }
  void free_pinned(void* ptr) override {
    --j_.pinned_live;
    ::operator delete(ptr);
  }
  void begin_upload(const void* after) override {
    j_.events.push_back(after ? "begin after " + std::string(static_cast<const char*>(after)) : "begin");
  }
  void wait(int slot) override { j_.events.push_back("wait " + std::to_string(slot)); }
  void copy(void* dst, const void* pinned, std::size_t bytes, int slot) override {
    std::memcpy(dst, pinned, bytes);
    j_.events.push_back("copy " + std::to_string(slot) + " " + std::to_string(bytes));
  }

 private:
  Journal& j_;
};

std::vector<unsigned char> pattern(std::size_t n, int seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 31 + static_cast<std::size_t>(seed)) % 251);
  return v;
}

TEST(StagingRing, ALargeUploadGoesInChunksThroughTheBuffersInTurn) {
  Journal j;
  {
    StagingRing ring(std::make_unique<FakeOps>(j), 2, 10);
    const std::vector<unsigned char> src = pattern(25, 1);
    std::vector<unsigned char> dst(25, 0);
    ring.upload(dst.data(), src.data(), src.size());
    EXPECT_EQ(dst, src);
    EXPECT_EQ(j.events, (std::vector<std::string>{"begin", "copy 0 10", "copy 1 10", "wait 0", "copy 0 5"}));
    EXPECT_EQ(j.pinned_allocations, 2);
  }
  // Each buffer waits for its last copy before it is freed.
  EXPECT_EQ(j.pinned_live, 0);
  EXPECT_EQ(j.events.back(), "wait 1");
}

TEST(StagingRing, AnUploadAfterAMarkerWaitsForThatMarkerOnly) {
  // The next batch's upload into a landing buffer waits for the copy out of it that began the current step (the
  // marker), not for the whole step: the ring hands the marker to the ops, which order the copy stream after it.
  Journal j;
  StagingRing ring(std::make_unique<FakeOps>(j), 2, 16);
  const std::vector<unsigned char> src = pattern(20, 3);
  std::vector<unsigned char> dst(20, 0);
  static const char marker[] = "landing-free";
  ring.upload(dst.data(), src.data(), src.size(), marker);
  EXPECT_EQ(dst, src);
  ring.upload(dst.data(), src.data(), 4);
  EXPECT_EQ(j.events, (std::vector<std::string>{"begin after landing-free", "copy 0 16", "copy 1 4", "begin", "wait 0",
                                                "copy 0 4"}));
}

TEST(StagingRing, ABufferIsRefilledOnlyAfterItsLastCopyWasWaitedFor) {
  Journal j;
  StagingRing ring(std::make_unique<FakeOps>(j), 3, 64);
  std::vector<std::vector<unsigned char>> dst(7, std::vector<unsigned char>(40, 0));
  for (int k = 0; k < 7; ++k) {
    const std::vector<unsigned char> src = pattern(40, k);
    ring.upload(dst[static_cast<std::size_t>(k)].data(), src.data(), src.size());
    EXPECT_EQ(dst[static_cast<std::size_t>(k)], src) << k;
  }
  // The first round fills new buffers; every later use of a buffer is preceded by a wait on that very buffer.
  int last_copy[3] = {-1, -1, -1};
  bool waited[3] = {false, false, false};
  for (std::size_t e = 0; e < j.events.size(); ++e) {
    const std::string& ev = j.events[e];
    if (ev.rfind("wait ", 0) == 0) waited[std::stoi(ev.substr(5))] = true;
    if (ev.rfind("copy ", 0) == 0) {
      const int slot = std::stoi(ev.substr(5));
      if (last_copy[slot] >= 0) EXPECT_TRUE(waited[slot]) << "buffer " << slot << " refilled without a wait";
      last_copy[slot] = static_cast<int>(e);
      waited[slot] = false;
    }
  }
  EXPECT_EQ(j.pinned_allocations, 3);
  EXPECT_EQ(std::count(j.events.begin(), j.events.end(), "begin"), 7);
}

TEST(StagingRing, EmptyUploadsDoNothingAndBadSizesAreRefused) {
  Journal j;
  StagingRing ring(std::make_unique<FakeOps>(j), 2, 8);
  ring.upload(nullptr, nullptr, 0);
  EXPECT_TRUE(j.events.empty());
  EXPECT_THROW(StagingRing(std::make_unique<FakeOps>(j), 0, 8), std::invalid_argument);
  EXPECT_THROW(StagingRing(std::make_unique<FakeOps>(j), 2, 0), std::invalid_argument);
  EXPECT_THROW(StagingRing(nullptr, 2, 8), std::invalid_argument);
}

}  // namespace
}  // namespace tower
