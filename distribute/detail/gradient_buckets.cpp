#include "distribute/detail/gradient_buckets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tower::distribute::detail {

std::vector<GradientBucket> assign_buckets(std::span<const Index> sizes, std::size_t cap_bytes) {
  if (cap_bytes == 0) throw std::invalid_argument("gradient buckets: the bucket cap must be at least one byte");
  std::vector<GradientBucket> buckets;
  Index end = 0;
  for (const Index s : sizes) {
    if (s < 0) throw std::invalid_argument("gradient buckets: a gradient of " + std::to_string(s) + " floats");
    end += s;
  }
  std::size_t filled = 0;
  for (int k = static_cast<int>(sizes.size()) - 1; k >= 0; --k) {
    const std::size_t bytes = static_cast<std::size_t>(sizes[static_cast<std::size_t>(k)]) * sizeof(float);
    if (buckets.empty() || (bytes > 0 && filled > 0 && filled + bytes > cap_bytes)) {
      buckets.push_back({end, end, {}});
      filled = 0;
    }
    GradientBucket& b = buckets.back();
    b.begin -= sizes[static_cast<std::size_t>(k)];
    b.gradients.push_back(k);
    filled += bytes;
    end = b.begin;
  }
  return buckets;
}

BucketTracker::BucketTracker(const std::vector<GradientBucket>* buckets, int gradients)
    : buckets_(buckets), bucket_of_(static_cast<std::size_t>(gradients), -1),
      outstanding_(buckets->size(), 0), ready_(static_cast<std::size_t>(gradients), 0) {
  for (std::size_t b = 0; b < buckets->size(); ++b)
    for (int k : (*buckets)[b].gradients) {
      if (k < 0 || k >= gradients)
        throw std::logic_error("gradient buckets: bucket " + std::to_string(b) + " holds gradient " +
                               std::to_string(k) + " of " + std::to_string(gradients));
      bucket_of_[static_cast<std::size_t>(k)] = static_cast<int>(b);
    }
  reset();
}

void BucketTracker::reset() {
  for (std::size_t b = 0; b < buckets_->size(); ++b)
    outstanding_[b] = static_cast<int>((*buckets_)[b].gradients.size());
  std::fill(ready_.begin(), ready_.end(), 0);
  next_ = 0;
}

std::pair<int, int> BucketTracker::mark_ready(int k) {
  if (k < 0 || k >= static_cast<int>(ready_.size()))
    throw std::logic_error("gradient buckets: gradient " + std::to_string(k) + " marked ready, but there are " +
                           std::to_string(ready_.size()));
  if (ready_[static_cast<std::size_t>(k)])
    throw std::logic_error("gradient buckets: gradient " + std::to_string(k) + " marked ready twice in one step");
  ready_[static_cast<std::size_t>(k)] = 1;
  --outstanding_[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(k)])];
  const int first = next_;
  while (next_ < static_cast<int>(buckets_->size()) && outstanding_[static_cast<std::size_t>(next_)] == 0) ++next_;
  return {first, next_};
}

}  // namespace tower::distribute::detail
