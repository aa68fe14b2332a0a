// Gradient buckets as DistributedDataParallel forms them: assignment in reverse order under the byte cap, and a
// bucket handed out for reduction exactly when it and every bucket before it are complete.
#include "distribute/detail/gradient_buckets.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tower::distribute::detail {
namespace {

// Gradients of 10, 20, 30, 5 and 1000 floats: offsets 0, 10, 30, 60, 65 (end 1065).
const std::vector<Index> kSizes{10, 20, 30, 5, 1000};

TEST(GradientBuckets, AssignedInReverseOrderUnderTheCap) {
  // 256 bytes = 64 floats: the 1000-float gradient alone (larger than the cap), then 5 + 30 + 20 = 55 floats, and
  // the 10 left would take that bucket to 65.
  const std::vector<GradientBucket> b = assign_buckets(kSizes, 256);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].gradients, (std::vector<int>{4}));
  EXPECT_EQ(b[0].begin, 65);
  EXPECT_EQ(b[0].end, 1065);
  EXPECT_EQ(b[1].gradients, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(b[1].begin, 10);
  EXPECT_EQ(b[1].end, 65);
  EXPECT_EQ(b[2].gradients, (std::vector<int>{0}));
  EXPECT_EQ(b[2].begin, 0);
  EXPECT_EQ(b[2].end, 10);
}

TEST(GradientBuckets, TheDefaultCapIsDistributedDataParallels) {
  EXPECT_EQ(kDefaultBucketCapBytes, 25u * 1024 * 1024);
  const std::vector<GradientBucket> one = assign_buckets(kSizes, kDefaultBucketCapBytes);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].gradients, (std::vector<int>{4, 3, 2, 1, 0}));
  EXPECT_EQ(one[0].begin, 0);
  EXPECT_EQ(one[0].end, 1065);
  // MobileNetV2's 3.5 M parameters (14 MB of float32 gradients) fit one default bucket; a cap of 1 byte gives one
  // bucket per non-empty gradient, and empty gradients join the bucket being filled.
  const std::vector<Index> with_empty{4, 0, 6};
  const std::vector<GradientBucket> tiny = assign_buckets(with_empty, 1);
  ASSERT_EQ(tiny.size(), 2u);
  EXPECT_EQ(tiny[0].gradients, (std::vector<int>{2, 1}));
  EXPECT_EQ(tiny[1].gradients, (std::vector<int>{0}));
  EXPECT_TRUE(assign_buckets(std::vector<Index>{}, 1).empty());
  EXPECT_THROW(assign_buckets(kSizes, 0), std::invalid_argument);
}

TEST(GradientBuckets, ABucketIsReducedAsSoonAsItIsComplete) {
  const std::vector<GradientBucket> b = assign_buckets(kSizes, 256);
  BucketTracker t(&b, 5);
  // Backward's order: the last gradient first.
  EXPECT_EQ(t.mark_ready(4), std::make_pair(0, 1));
  EXPECT_EQ(t.mark_ready(3), std::make_pair(1, 1));
  EXPECT_EQ(t.mark_ready(2), std::make_pair(1, 1));
  EXPECT_EQ(t.mark_ready(1), std::make_pair(1, 2));
  EXPECT_FALSE(t.all_reduced());
  EXPECT_EQ(t.mark_ready(0), std::make_pair(2, 3));
  EXPECT_TRUE(t.all_reduced());
}

TEST(GradientBuckets, BucketsGoOutInOrderWhateverOrderGradientsComeIn) {
  const std::vector<GradientBucket> b = assign_buckets(kSizes, 256);
  BucketTracker t(&b, 5);
  for (int step = 0; step < 2; ++step) {
    t.reset();
    // Bucket 2 and then bucket 1 complete first, but wait for bucket 0, so every replica reduces 0, 1, 2.
    EXPECT_EQ(t.mark_ready(0), std::make_pair(0, 0));
    EXPECT_EQ(t.mark_ready(1), std::make_pair(0, 0));
    EXPECT_EQ(t.mark_ready(3), std::make_pair(0, 0));
    EXPECT_EQ(t.mark_ready(2), std::make_pair(0, 0));
    EXPECT_EQ(t.reduced(), 0);
    EXPECT_EQ(t.mark_ready(4), std::make_pair(0, 3));
    EXPECT_TRUE(t.all_reduced());
  }
  EXPECT_THROW(t.mark_ready(4), std::logic_error);  // twice in a step
  EXPECT_THROW(t.mark_ready(5), std::logic_error);
}

}  // namespace
}  // namespace tower::distribute::detail
