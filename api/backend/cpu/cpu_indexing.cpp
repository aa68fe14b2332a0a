// The CPU's strided copies, gathers, scans, extremes and casts: the functors of math/indexing.h in the threaded
// loops of cpu/loops.h. The per-column functors (take_backward, cumsum, reduce_extreme) loop over a column each, so
// they are split over the threads by columns, a column's cost setting the grain.
#include <algorithm>

#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/indexing.h"

namespace tower::backend::cpu {

namespace {
// parallel_for's grain for calls that each walk a column of `length` elements.
Index column_grain(Index length) { return std::max<Index>(1, kParallelGrain / std::max<Index>(length, 1)); }
}  // namespace

void CpuBackend::strided_copy(const float* x, float* y, const StridedCopy& s) {
  Index n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  elementwise(n, math::StridedCopyElement{x, y, s});
}

void CpuBackend::take(AnyValues indices, Index count, const float* x, float* y, Index outer, Index n, Index inner) {
  elementwise(outer * count * inner, math::Take{indices, x, y, count, n, inner});
}

void CpuBackend::take_backward(AnyValues indices, Index count, const float* dy, float* dx, Index outer, Index n,
                               Index inner) {
  parallel_for(outer * inner, math::TakeBackwardColumn{indices, dy, dx, count, n, inner}, column_grain(count + n));
}

void CpuBackend::find_invalid_index(AnyValues indices, Index count, Index n, std::int64_t* first) {
  const math::InvalidIndex term{indices, count, n};
  std::int64_t v = count;
  for (Index j = 0; j < count && v == count; ++j) v = math::IndexMin{}(v, term(j));
  math::StoreFirstInvalid{first, count}(v);
}

void CpuBackend::cumsum(const float* x, float* y, Index outer, Index n, Index inner, bool reverse) {
  parallel_for(outer * inner, math::CumulativeSum{x, y, n, inner, reverse}, column_grain(n));
}

void CpuBackend::reduce_extreme(bool max, const float* x, float* y, std::int32_t* arg, Index outer, Index n,
                                Index inner) {
  parallel_for(outer * inner, math::Extreme{max, x, y, arg, n, inner}, column_grain(n));
}

void CpuBackend::cast(AnyValues x, Index n, DType to, void* y) { elementwise(n, math::Cast{x, to, y}); }

}  // namespace tower::backend::cpu
