// CudaBackend's strided copies, gathers, scans, extremes and casts: the functors of math/indexing.h, which the CPU
// backend runs, in for_each kernels on the backend's stream, and find_invalid_index through CUB with the CPU's term.
// take_backward adds with atomics (TakeBackwardAdd), so sums of a repeated index may round differently from the
// CPU's ordered ones; cumsum and reduce_extreme give a column to a thread.
#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/cuda/reduce.cuh"
#include "api/backend/math/indexing.h"

namespace tower::backend::cuda {

namespace {
// "<op> [outer, n, inner]" for launch errors, built by appending only (GCC 12's -Wrestrict, as elsewhere).
std::string describe(const char* op, Index outer, Index n, Index inner) {
  std::string s = op;
  s += " [";
  s += std::to_string(outer);
  s += ", ";
  s += std::to_string(n);
  s += ", ";
  s += std::to_string(inner);
  s += ']';
  return s;
}
}  // namespace

void CudaBackend::strided_copy(const float* x, float* y, const StridedCopy& s) {
  Index n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  for_each(n, math::StridedCopyElement{x, y, s}, stream(), "strided_copy");
}

void CudaBackend::take(AnyValues indices, Index count, const float* x, float* y, Index outer, Index n, Index inner) {
  const std::string op = describe("take (outer, n, inner)", outer, n, inner);
  for_each(outer * count * inner, math::Take{indices, x, y, count, n, inner}, stream(), op.c_str());
}

void CudaBackend::take_backward(AnyValues indices, Index count, const float* dy, float* dx, Index outer, Index n,
                                Index inner) {
  const std::string op = describe("take_backward (outer, n, inner)", outer, n, inner);
  fill_bytes(dx, static_cast<std::size_t>(outer * n * inner) * sizeof(float), 0);
  for_each(outer * count * inner, math::TakeBackwardAdd{indices, dy, dx, count, n, inner}, stream(), op.c_str());
}

void CudaBackend::find_invalid_index(AnyValues indices, Index count, Index n, std::int64_t* first) {
  reduce(*this, count, math::InvalidIndex{indices, count, n}, math::IndexMin{}, std::int64_t{count},
         math::StoreFirstInvalid{first, count}, "find_invalid_index");
}

void CudaBackend::cumsum(const float* x, float* y, Index outer, Index n, Index inner, bool reverse) {
  const std::string op = describe("cumsum (outer, n, inner)", outer, n, inner);
  for_each(outer * inner, math::CumulativeSum{x, y, n, inner, reverse}, stream(), op.c_str());
}

void CudaBackend::reduce_extreme(bool max, const float* x, float* y, std::int32_t* arg, Index outer, Index n,
                                 Index inner) {
  const std::string op = describe(max ? "reduce_extreme max (outer, n, inner)" : "reduce_extreme min (outer, n, inner)",
                                  outer, n, inner);
  for_each(outer * inner, math::Extreme{max, x, y, arg, n, inner}, stream(), op.c_str());
}

void CudaBackend::cast(AnyValues x, Index n, DType to, void* y) {
  for_each(n, math::Cast{x, to, y}, stream(), "cast");
}

}  // namespace tower::backend::cuda
