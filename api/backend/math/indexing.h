#pragma once
// The arithmetic and indexing of Backend::strided_copy, take, take_backward, find_invalid_index, cumsum,
// reduce_extreme and cast, once for both backends: the CPU backend runs these functors in its loops
// (cpu/cpu_indexing.cpp), the CUDA backend in for_each and CUB (cuda/cuda_indexing.cu). Every functor but
// TakeBackwardAdd writes only the outputs its own index names, so the loops need no synchronisation.
#include <cstdint>

#include "api/backend/backend.h"
#include "api/backend/math/any_values.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// Backend::strided_copy over the index space of s.dims, one element per call: the coordinates of flat index i
// (row-major), then each side's offset by its strides.
struct StridedCopyElement {
  const float* x;
  float* y;
  StridedCopy s;
  TOWER_HD void operator()(Index i) const {
    Index rest = i, from = 0, to = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const Division d = divide(rest, s.dims[k]);
      from += d.remainder * s.x_strides[k];
      to += d.remainder * s.y_strides[k];
      rest = d.quotient;
    }
    y[to] = x[from];
  }
};

// indices[j]'s position along an axis of n, a negative index counting from the end; -1 outside [-n, n).
TOWER_HD Index take_position(AnyValues indices, Index j, Index n) {
  const std::int64_t v = index_at(indices, j);
  if (v < -n || v >= n) return -1;
  return v < 0 ? v + n : v;
}

// Backend::take over y [outer, count, inner], one element per call.
struct Take {
  AnyValues indices;
  const float* x;
  float* y;
  Index count, n, inner;
  TOWER_HD void operator()(Index i) const {
    const Division column = divide(i, inner), row = divide(column.quotient, count);
    const Index p = take_position(indices, row.remainder, n);
    y[i] = p < 0 ? 0.f : x[(row.quotient * n + p) * inner + column.remainder];
  }
};

// Backend::take_backward as the CPU runs it: one column (o, r) of dx [outer, n, inner] per call, over outer *
// inner columns: zeroed, then dy's contributions added in the order of j. Columns are disjoint, so the result does
// not depend on the threads.
struct TakeBackwardColumn {
  AnyValues indices;
  const float* dy;
  float* dx;
  Index count, n, inner;
  TOWER_HD void operator()(Index c) const {
    const Division d = divide(c, inner);
    float* column = dx + d.quotient * n * inner + d.remainder;
    const float* from = dy + d.quotient * count * inner + d.remainder;
    for (Index p = 0; p < n; ++p) column[p * inner] = 0.f;
    for (Index j = 0; j < count; ++j) {
      const Index p = take_position(indices, j, n);
      if (p >= 0) column[p * inner] += from[j * inner];
    }
  }
};

// Backend::take_backward as the GPU runs it, after dx is zeroed: one element of dy [outer, count, inner] per call,
// added to its row of dx atomically (on the host, a plain addition: run it on one thread there).
struct TakeBackwardAdd {
  AnyValues indices;
  const float* dy;
  float* dx;
  Index count, n, inner;
  TOWER_HD void operator()(Index i) const {
    const Division column = divide(i, inner), row = divide(column.quotient, count);
    const Index p = take_position(indices, row.remainder, n);
    if (p < 0) return;
    float* to = dx + (row.quotient * n + p) * inner + column.remainder;
#if defined(__CUDA_ARCH__)
    atomicAdd(to, dy[i]);
#else
    *to += dy[i];
#endif
  }
};

// j when index j is outside [-n, n), else count: the smallest over j is the first invalid index.
struct InvalidIndex {
  AnyValues indices;
  Index count, n;
  TOWER_HD std::int64_t operator()(Index j) const { return take_position(indices, j, n) < 0 ? j : count; }
};

// *out = the first invalid index found by an IndexMin over InvalidIndex, or -1 when it found none (count).
struct StoreFirstInvalid {
  std::int64_t* out;
  Index count;
  TOWER_HD void operator()(std::int64_t v) const { *out = v == count ? -1 : v; }
};

// Backend::cumsum: one column (o, r) of [outer, n, inner] per call, over outer * inner columns; the running sum in
// double, each element rounded once. Reads element j before writing it, so y may be x.
struct CumulativeSum {
  const float* x;
  float* y;
  Index n, inner;
  bool reverse;
  TOWER_HD void operator()(Index c) const {
    const Division d = divide(c, inner);
    const Index base = d.quotient * n * inner + d.remainder;
    double sum = 0;
    for (Index t = 0; t < n; ++t) {
      const Index at = base + (reverse ? n - 1 - t : t) * inner;
      sum += x[at];
      y[at] = static_cast<float>(sum);
    }
  }
};

// Backend::reduce_extreme: one column (o, r) of [outer, n, inner] per call, over outer * inner columns. The first
// element wins ties; a NaN wins over everything and ends the scan.
struct Extreme {
  bool max;
  const float* x;
  float* y;
  std::int32_t* arg;
  Index n, inner;
  TOWER_HD void operator()(Index c) const {
    const Division d = divide(c, inner);
    const float* column = x + d.quotient * n * inner + d.remainder;
    float best = column[0];
    Index at = 0;
    for (Index j = 1; j < n && best == best; ++j) {
      const float v = column[j * inner];
      if (v != v || (max ? v > best : v < best)) {
        best = v;
        at = j;
      }
    }
    if (y) y[c] = best;
    if (arg) arg[c] = static_cast<std::int32_t>(at);
  }
};

// A float as an int64, truncated toward zero: 0 for NaN, saturated beyond int64's range.
TOWER_HD std::int64_t float_to_int64(float f) {
  if (f != f) return 0;
  if (f >= 9223372036854775808.f) return INT64_MAX;
  if (f < -9223372036854775808.f) return INT64_MIN;
  return static_cast<std::int64_t>(f);
}

// Backend::cast, one element per call.
struct Cast {
  AnyValues x;
  DType to;
  void* y;
  TOWER_HD void operator()(Index i) const {
    if (x.dtype == DType::float32) {
      const float f = static_cast<const float*>(x.data)[i];
      switch (to) {
        case DType::float32: static_cast<float*>(y)[i] = f; return;
        case DType::int32:
          static_cast<std::int32_t*>(y)[i] = f != f ? 0 : f >= 2147483648.f ? INT32_MAX
                                                     : f < -2147483648.f  ? INT32_MIN
                                                                          : static_cast<std::int32_t>(f);
          return;
        case DType::int64: static_cast<std::int64_t*>(y)[i] = float_to_int64(f); return;
        case DType::uint8:
          static_cast<std::uint8_t*>(y)[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(float_to_int64(f)));
          return;
      }
      return;
    }
    const std::int64_t v = index_at(x, i);  // an integer dtype: exact
    switch (to) {
      case DType::float32: static_cast<float*>(y)[i] = static_cast<float>(v); return;
      case DType::int32: static_cast<std::int32_t*>(y)[i] = static_cast<std::int32_t>(v); return;
      case DType::int64: static_cast<std::int64_t*>(y)[i] = v; return;
      case DType::uint8: static_cast<std::uint8_t*>(y)[i] = static_cast<std::uint8_t>(v); return;
    }
  }
};

}  // namespace tower::backend::math
