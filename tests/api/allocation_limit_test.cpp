#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "api/core/allocator.h"
#include "api/core/tensor.h"

namespace tower {
namespace {

TEST(AllocationLimit, CountsTensorStorageAndRefusesWhatPassesTheLimit) {
  AllocationLimit limit(1000, "building 'x'");
  Tensor a({100}, DType::float32);  // 400 bytes
  Tensor b({100}, DType::float32);  // 800
  EXPECT_EQ(limit.allocated(), 800u);
  try {
    Tensor c({100}, DType::float32);  // would be 1200
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "building 'x': it would allocate 1200 bytes of tensors, more than the 1000 allowed");
  }
  EXPECT_EQ(limit.allocated(), 800u);  // the refused allocation is not counted
  Tensor d({50}, DType::float32);      // 1000: exactly the limit
  EXPECT_EQ(limit.allocated(), 1000u);
}

TEST(AllocationLimit, TheInnermostLimitAppliesAndOnlyOnItsThread) {
  AllocationLimit outer(1 << 20, "outer");
  {
    AllocationLimit inner(100, "inner");
    EXPECT_THROW(Tensor({100}, DType::float32), std::runtime_error);
    // Another thread has no limit.
    std::thread([] { EXPECT_NO_THROW(Tensor({1000}, DType::float32)); }).join();
  }
  EXPECT_NO_THROW(Tensor({1000}, DType::float32));
  EXPECT_EQ(outer.allocated(), 4000u);
}

TEST(AllocationLimit, NoLimitOutsideOne) { EXPECT_NO_THROW(Tensor({1 << 20}, DType::float32)); }

}  // namespace
}  // namespace tower
