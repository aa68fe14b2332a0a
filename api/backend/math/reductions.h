#pragma once
// The reductions of Backend::bias_grad and Backend::sum as the CUDA backend computes them.
//
// bias_grad (column sums of a row-major [rows, cols] matrix; rows can be 800,000 and cols 16) runs in two
// deterministic passes: ColumnPartialSums sums each column over blocks of rows into a [blocks, cols] scratch
// matrix, then ColumnSumsOfPartials adds each column's partials in block order. The CPU backend sums each column
// in row order instead (cpu::column_sums); the two agree exactly wherever no sum rounds (integer data), which
// tests/backend/math_functors_test.cpp checks.
#include <algorithm>
#include <cmath>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// How ColumnPartialSums splits the rows: rows_per_block near sqrt(rows) balances the serial loops of the two
// passes (rows_per_block additions in the first, blocks in the second).
struct ColumnBlocks {
  Index rows_per_block, blocks;
};

inline ColumnBlocks column_blocks(Index rows) {
  const Index per_block = std::max<Index>(32, static_cast<Index>(std::ceil(std::sqrt(static_cast<double>(rows)))));
  return {per_block, (rows + per_block - 1) / per_block};
}

// partial[b, c] = sum of dy[r, c] over rows r of block b, in row order; over the blocks * cols partials.
struct ColumnPartialSums {
  const float* dy;
  float* partial;
  Index rows, cols, rows_per_block;
  TOWER_HD void operator()(Index i) const {
    const Index c = i % cols, first = i / cols * rows_per_block;
    const Index last = first + rows_per_block < rows ? first + rows_per_block : rows;
    float s = 0.f;
    for (Index r = first; r < last; ++r) s += dy[r * cols + c];
    partial[i] = s;
  }
};

// db[c] = sum of partial[b, c] over the blocks, in block order; over the cols columns.
struct ColumnSumsOfPartials {
  const float* partial;
  float* db;
  Index blocks, cols;
  TOWER_HD void operator()(Index c) const {
    float s = 0.f;
    for (Index b = 0; b < blocks; ++b) s += partial[b * cols + c];
    db[c] = s;
  }
};

// Backend::sum accumulates in double and rounds once to float: the CUDA backend reduces into a double on the
// device, then stores it with RoundToFloat.
struct RoundToFloat {
  const double* sum;
  float* y;
  TOWER_HD void operator()(Index) const { *y = static_cast<float>(*sum); }
};

}  // namespace tower::backend::math
