#pragma once
// Statistics the benchmarks report.
#include <algorithm>
#include <vector>

namespace tower::bench {

// The middle value of v (the upper one of the two middles for an even count); v must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace tower::bench
