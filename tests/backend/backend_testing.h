#pragma once
// What the backend tests share: seeded inputs, pooling sizes and windows, and a close-enough comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"

namespace tower::backend::backend_testing {

// n values drawn uniformly from [low, high) by a generator seeded with `seed`.
inline std::vector<float> random_values(Index n, std::uint64_t seed, float low = -1.f, float high = 1.f) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = g.uniform(low, high);
  return v;
}

// A random permutation of 0.05 * [0, n), shifted to be centred on zero: no two values are equal, so every
// max-pooling window has one argmax.
inline std::vector<float> distinct_values(Index n, std::uint64_t seed) {
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  Generator g(seed);
  for (Index i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(g.next_u64() % static_cast<std::uint64_t>(i + 1))]);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 0.05f * static_cast<float>(order[static_cast<std::size_t>(i)] - n / 2);
  return v;
}

inline Index x_size(const Pool2DParams& p) { return p.batch * p.in_h * p.in_w * p.channels; }
inline Index y_size(const Pool2DParams& p) { return p.batch * p.out_h * p.out_w * p.channels; }

// Calls f(y index, the x indices of its window inside the image, padding left out) for every output element,
// NHWC.
template <class F>
void for_each_window(const Pool2DParams& p, F&& f) {
  std::vector<Index> window;
  for (Index b = 0; b < p.batch; ++b)
    for (Index oh = 0; oh < p.out_h; ++oh)
      for (Index ow = 0; ow < p.out_w; ++ow)
        for (Index c = 0; c < p.channels; ++c) {
          window.clear();
          for (Index kh = 0; kh < p.pool_h; ++kh)
            for (Index kw = 0; kw < p.pool_w; ++kw) {
              const Index ih = oh * p.stride_h - p.pad_top + kh, iw = ow * p.stride_w - p.pad_left + kw;
              if (ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w)
                window.push_back(((b * p.in_h + ih) * p.in_w + iw) * p.channels + c);
            }
          f(((b * p.out_h + oh) * p.out_w + ow) * p.channels + c, window);
        }
}

// Fails (naming the first five elements) unless every element is within tolerance * (1 + |expected|).
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what,
                         float tolerance) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= tolerance + tolerance * std::fabs(expected[i])) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace tower::backend::backend_testing
