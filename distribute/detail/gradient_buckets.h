#pragma once
// Gradient buckets, as PyTorch's DistributedDataParallel forms them: a model's gradients are grouped, in reverse
// order of the weights (the order backward produces them), into buckets of at most a byte cap, and each bucket is
// reduced across replicas as soon as all its gradients are ready, while backward goes on with the rest. Buckets
// are reduced strictly in bucket order, whatever order gradients become ready in, so every replica makes the same
// sequence of collective calls.
//
// The gradients are the views of one flat buffer (Plan::flat_grads), each on a 256-byte boundary: gradient k
// takes floats [offset_k, offset_k + sizes[k]), offset_k being the sum of the sizes before it, where sizes[k] is
// the gradient's room with the padding after it (PackedBuffers::rooms, api/core/alignment.h). Taken in reverse
// order, each bucket is one contiguous range of that buffer, so a bucket is reduced in place with one call and no
// copy.
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "api/core/shape.h"

namespace tower::distribute::detail {

// DistributedDataParallel's default bucket_cap_mb: 25 MiB.
inline constexpr std::size_t kDefaultBucketCapBytes = std::size_t{25} << 20;

struct GradientBucket {
  Index begin = 0, end = 0;    // floats [begin, end) of the flat buffer
  std::vector<int> gradients;  // the gradients it holds, highest index first
};

// Buckets for gradients of `sizes` floats: bucket 0 starts with the last gradient, and a bucket is closed before a
// gradient that would take it past cap_bytes, so only a single gradient larger than the cap makes a bucket larger
// than the cap. Empty gradients join the bucket being filled. No gradients, no buckets. Throws
// std::invalid_argument for cap_bytes == 0 or a negative size.
std::vector<GradientBucket> assign_buckets(std::span<const Index> sizes, std::size_t cap_bytes);

// One replica's progress through the buckets during a step. Allocation-free after construction.
class BucketTracker {
 public:
  // `buckets` from assign_buckets over `gradients` gradients; the tracker keeps a pointer to it.
  BucketTracker(const std::vector<GradientBucket>* buckets, int gradients);
  // Before a step: no gradient ready, no bucket reduced.
  void reset();
  // Marks gradient k ready and returns the buckets [first, last) that may now be reduced: every complete bucket
  // from the next one not yet reduced up to the first incomplete one (an empty range when the next bucket is not
  // complete yet). The caller reduces them in that order. Throws std::logic_error for a k out of range or marked
  // twice in a step.
  std::pair<int, int> mark_ready(int k);
  // Buckets handed out by mark_ready this step.
  int reduced() const { return next_; }
  bool all_reduced() const { return next_ == static_cast<int>(buckets_->size()); }

 private:
  const std::vector<GradientBucket>* buckets_;
  std::vector<int> bucket_of_;    // per gradient
  std::vector<int> outstanding_;  // per bucket: gradients not ready yet
  std::vector<char> ready_;       // per gradient
  int next_ = 0;
};

}  // namespace tower::distribute::detail
