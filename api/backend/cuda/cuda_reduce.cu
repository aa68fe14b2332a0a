// CudaBackend's reductions: bias_grad in two deterministic passes of the functors of math/reductions.h, sum with
// CUB. Both use the backend's workspace for their scratch memory.
#include <cub/device/device_reduce.cuh>

#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/elementwise.h"
#include "api/backend/math/reductions.h"

namespace tower::backend::cuda {

void CudaBackend::bias_grad(const float* dy, float* db, Index rows, Index cols) {
  // Appended piece by piece: GCC 12 misreads a string inserted in front of another as an overlapping copy.
  std::string op = "bias_grad (rows, cols) [";
  op += std::to_string(rows);
  op += ", ";
  op += std::to_string(cols);
  op += ']';
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  auto* partial = static_cast<float*>(workspace(static_cast<std::size_t>(blocks.blocks * cols) * sizeof(float)));
  for_each(blocks.blocks * cols, math::ColumnPartialSums{dy, partial, rows, cols, blocks.rows_per_block}, stream(),
           op.c_str());
  for_each(cols, math::ColumnSumsOfPartials{partial, db, blocks.blocks, cols}, stream(), op.c_str());
}

void CudaBackend::sum(const float* x, float* y, Index n) {
  std::string op = "sum (n) [";
  op += std::to_string(n);
  op += ']';
  if (n <= 0) {
    for_each(1, math::Fill{y, 0.f}, stream(), op.c_str());
    return;
  }
  // CUB accumulates in the output's type: a double, as the CPU's sum does, rounded once to float afterwards.
  double* no_total = nullptr;
  std::size_t temp_bytes = 0;
  check_cuda(cub::DeviceReduce::Sum(nullptr, temp_bytes, x, no_total, n, stream()), op);
  // The total first, then CUB's temporary storage at an offset that keeps the latter 256-byte aligned.
  constexpr std::size_t kTempOffset = 256;
  auto* scratch = static_cast<unsigned char*>(workspace(kTempOffset + temp_bytes));
  auto* total = reinterpret_cast<double*>(scratch);
  check_cuda(cub::DeviceReduce::Sum(scratch + kTempOffset, temp_bytes, x, total, n, stream()), op);
  for_each(1, math::RoundToFloat{total, y}, stream(), op.c_str());
}

}  // namespace tower::backend::cuda
