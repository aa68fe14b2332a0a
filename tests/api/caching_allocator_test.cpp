// The caching allocator's logic, driven through a fake raw allocator that records what it was asked: the same
// class serves the GPUs over cudaMalloc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/core/allocator.h"

namespace tower {
namespace {

struct RawLog {
  std::vector<std::size_t> allocated, freed;
  std::size_t capacity = 1 << 20, held = 0;
};

class FakeRaw final : public RawAllocator {
 public:
  explicit FakeRaw(RawLog& log) : log_(log) {}
  void* allocate(std::size_t bytes) override {
    if (log_.held + bytes > log_.capacity) return nullptr;
    log_.held += bytes;
    log_.allocated.push_back(bytes);
    return std::aligned_alloc(256, bytes);
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    log_.held -= bytes;
    log_.freed.push_back(bytes);
    std::free(ptr);
  }
  std::size_t free_bytes() const override { return log_.capacity - log_.held; }
  Device device() const override { return Device::cuda(3); }

 private:
  RawLog& log_;
};

TEST(CachingAllocator, AFreedBlockServesTheNextRequestOfItsBin) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  void* q = a.allocate(1000);
  EXPECT_EQ(p, q);
  EXPECT_EQ(log.allocated.size(), 1u);
  const AllocatorStats s = a.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.system_allocations, 1u);
  EXPECT_EQ(s.bytes_in_use, 1024u);  // rounded to the 256-byte alignment
  EXPECT_EQ(s.bytes_cached, 0u);
  a.deallocate(q, 1000);
}

TEST(CachingAllocator, ASlightlySmallerRequestReusesTheBlock) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  // The last, short batch: 100000 bytes then 99000 fall in the same 1/8-of-a-power-of-two bin.
  EXPECT_EQ(a.block_size(100000), a.block_size(99000));
  EXPECT_NE(a.block_size(100000), a.block_size(60000));
  void* p = a.allocate(100000);
  a.deallocate(p, 100000);
  void* q = a.allocate(99000);
  EXPECT_EQ(p, q);
  EXPECT_EQ(log.allocated.size(), 1u);
  a.deallocate(q, 99000);
}

TEST(CachingAllocator, CountsReservedAndPeakBytes) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* p = a.allocate(4096);
  void* q = a.allocate(4096);
  a.deallocate(p, 4096);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 4096u);
  EXPECT_EQ(s.bytes_cached, 4096u);
  EXPECT_EQ(s.bytes_reserved, 8192u);
  EXPECT_EQ(s.peak_bytes_in_use, 8192u);
  EXPECT_EQ(s.peak_bytes_reserved, 8192u);
  a.empty_cache();
  s = a.stats();
  EXPECT_EQ(s.bytes_reserved, 4096u);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(log.freed, std::vector<std::size_t>{4096});
  a.deallocate(q, 4096);
}

TEST(CachingAllocator, WhenTheDeviceIsFullTheCacheIsReturnedAndTheRequestRetried) {
  RawLog log;
  log.capacity = 3 * 65536;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* p = a.allocate(65536);
  void* q = a.allocate(65536);
  a.deallocate(p, 65536);
  a.deallocate(q, 65536);
  // 131072 bytes fit only once the two cached 65536-byte blocks go back to the device.
  void* r = a.allocate(131072);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(log.freed, (std::vector<std::size_t>{65536, 65536}));
  EXPECT_EQ(a.stats().bytes_reserved, 131072u);
  a.deallocate(r, 131072);
}

TEST(CachingAllocator, OutOfMemorySaysWhereHowMuchWasNeededAndHowMuchWasFree) {
  RawLog log;
  log.capacity = 2 << 20;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* p = a.allocate(1 << 20);
  try {
    a.allocate(3 << 20);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_STREQ(e.what(), "out of memory on cuda:3: 3.0 MiB needed, 1.0 MiB free; tensors hold 1.0 MiB");
  }
  // Still usable, and an OutOfMemory is a std::bad_alloc for code that catches that.
  EXPECT_THROW(a.allocate(5 << 20), std::bad_alloc);
  a.deallocate(p, 1 << 20);
  EXPECT_EQ(a.stats().bytes_in_use, 0u);
}

TEST(CachingAllocator, TheDestructorReturnsEveryCachedBlock) {
  RawLog log;
  {
    CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
    void* p = a.allocate(300);
    void* q = a.allocate(70000);
    a.deallocate(p, 300);
    a.deallocate(q, 70000);
  }
  EXPECT_EQ(log.held, 0u);
  EXPECT_EQ(log.freed.size(), 2u);
}

// ---- private pools (the memory of captured CUDA graphs) ---------------------------------------------------------

TEST(CachingAllocator, APrivatePoolNeverTakesABlockOfTheGeneralCache) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* general = a.allocate(1000);
  a.deallocate(general, 1000);
  const int pool = a.begin_private_pool();
  EXPECT_GT(pool, 0);
  EXPECT_EQ(a.current_pool(), pool);
  void* p = a.allocate(1000);
  EXPECT_NE(p, general);
  EXPECT_EQ(log.allocated.size(), 2u);
  a.deallocate(p, 1000);
  a.end_private_pool();
  EXPECT_EQ(a.current_pool(), 0);
  a.release_private_pool(pool);
}

TEST(CachingAllocator, AClosedPoolsBlocksNeverServeOtherAllocations) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  const int pool = a.begin_private_pool();
  void* freed_inside = a.allocate(1000);
  void* live = a.allocate(5000);
  a.deallocate(freed_inside, 1000);
  a.end_private_pool();
  // Freed after the pool closed, the block still goes back to the pool.
  a.deallocate(live, 5000);
  void* q = a.allocate(1000);
  void* r = a.allocate(5000);
  EXPECT_NE(q, freed_inside);
  EXPECT_NE(r, live);
  EXPECT_EQ(log.allocated.size(), 4u);
  // Returning the general cache to the device (as before an out-of-memory retry) leaves the pool's blocks alone.
  a.deallocate(q, 1000);
  a.deallocate(r, 5000);
  a.empty_cache();
  EXPECT_EQ(log.freed.size(), 2u);
  EXPECT_EQ(a.stats().bytes_private, 1024u + a.block_size(5000));
  a.release_private_pool(pool);
}

TEST(CachingAllocator, APoolReusesItsOwnFreedBlocks) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  const int first = a.begin_private_pool();
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  EXPECT_EQ(a.allocate(1000), p);
  a.deallocate(p, 1000);
  a.end_private_pool();
  // A second pool has its own blocks: the first pool's cached block is not handed to it.
  const int second = a.begin_private_pool();
  EXPECT_NE(second, first);
  void* q = a.allocate(1000);
  EXPECT_NE(q, p);
  a.deallocate(q, 1000);
  a.end_private_pool();
  EXPECT_EQ(log.allocated.size(), 2u);
  a.release_private_pool(first);
  a.release_private_pool(second);
}

TEST(CachingAllocator, PrivatePoolCounters) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  const int pool = a.begin_private_pool();
  void* p = a.allocate(4096);
  void* q = a.allocate(4096);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.system_allocations, 2u);
  EXPECT_EQ(s.bytes_in_use, 8192u);
  EXPECT_EQ(s.bytes_reserved, 8192u);
  EXPECT_EQ(s.bytes_private, 0u);
  a.deallocate(p, 4096);
  a.end_private_pool();
  s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 4096u);
  EXPECT_EQ(s.bytes_cached, 4096u);
  EXPECT_EQ(s.bytes_private, 4096u);
  EXPECT_EQ(s.bytes_reserved, 8192u);
  a.release_private_pool(pool);
  s = a.stats();
  EXPECT_EQ(s.bytes_cached, 4096u);
  EXPECT_EQ(s.bytes_private, 0u);
  a.deallocate(q, 4096);
  EXPECT_EQ(a.stats().bytes_private, 0u);
  EXPECT_EQ(a.stats().bytes_cached, 8192u);
}

TEST(CachingAllocator, AReleasedPoolsBlocksJoinTheGeneralCache) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  const int pool = a.begin_private_pool();
  void* freed = a.allocate(1000);
  void* live = a.allocate(70000);
  a.deallocate(freed, 1000);
  a.end_private_pool();
  a.release_private_pool(pool);
  EXPECT_EQ(a.allocate(1000), freed);
  a.deallocate(live, 70000);  // still in use at the release: it joins the general cache when freed
  EXPECT_EQ(a.allocate(70000), live);
  EXPECT_EQ(log.allocated.size(), 2u);
  a.deallocate(freed, 1000);
  a.deallocate(live, 70000);
  a.empty_cache();
  EXPECT_EQ(log.held, 0u);
  EXPECT_THROW(a.release_private_pool(pool), std::logic_error);
}

TEST(CachingAllocator, OnlyTheThreadThatOpenedAPoolAllocatesFromIt) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  void* general = a.allocate(1000);
  a.deallocate(general, 1000);
  const int pool = a.begin_private_pool();
  void* other = nullptr;
  int other_pool = -1;
  std::thread([&] {
    other_pool = a.current_pool();
    other = a.allocate(1000);
    EXPECT_THROW(a.end_private_pool(), std::logic_error);
  }).join();
  EXPECT_EQ(other_pool, 0);
  EXPECT_EQ(other, general);  // the other thread was served from the general cache
  a.deallocate(other, 1000);
  a.end_private_pool();
  a.release_private_pool(pool);
}

TEST(CachingAllocator, MisusedPoolsAreLogicErrors) {
  RawLog log;
  CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
  EXPECT_THROW(a.end_private_pool(), std::logic_error);
  EXPECT_THROW(a.release_private_pool(1), std::logic_error);
  const int pool = a.begin_private_pool();
  EXPECT_THROW(a.begin_private_pool(), std::logic_error);
  EXPECT_THROW(a.release_private_pool(pool), std::logic_error);
  a.end_private_pool();
  a.release_private_pool(pool);
}

TEST(CachingAllocator, TheDestructorReturnsThePoolsCachedBlocksToo) {
  RawLog log;
  {
    CachingAllocator a(std::make_unique<FakeRaw>(log), 256);
    a.begin_private_pool();
    void* p = a.allocate(300);
    a.deallocate(p, 300);
    a.end_private_pool();
  }
  EXPECT_EQ(log.held, 0u);
}

}  // namespace
}  // namespace tower
