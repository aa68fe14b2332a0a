#pragma once
// Building blocks of the CPU's elementwise loops (backend, optimizers). Internal: not installed.
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>

#include "api/backend/backend.h"
#include "api/core/shape.h"

namespace tower::backend::cpu {

// Marks a hot loop function to be compiled for x86-64-v4 (AVX-512) and v3 (AVX2) besides the baseline x86-64 the
// library is built for, the best clone picked when the library loads. All clones give bitwise the same results:
// the library is built with -ffp-contract=off, so no clone fuses a multiply-add, and vector arithmetic, sqrt and
// division round like scalar. GCC only: Clang (14) does not clone function templates, so it builds the baseline.
// Building with -DTOWER_VECTOR_CLONES_UP_TO_AVX2 leaves the AVX-512 clone out, so that an AVX-512 machine runs
// the loops an AVX2-only machine runs (with ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN's kernels; bench/RESULTS.md).
// ThreadSanitizer builds (make test-tsan) leave the clones out: their resolvers run while the dynamic loader
// relocates the library, before ThreadSanitizer's runtime can take their instrumented calls.
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#ifdef TOWER_VECTOR_CLONES_UP_TO_AVX2
#define TOWER_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TOWER_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#endif
#ifndef TOWER_VECTOR_CLONES
#define TOWER_VECTOR_CLONES
#endif

// While alive, this thread flushes denormal floats to zero (FTZ: results; DAZ: operands) when
// backend::flush_denormals() is on; its previous setting comes back at the end. Every loop below holds one on each
// of its threads, so a kernel runs under the same setting on the caller's thread and OpenMP's, whatever the pool's
// threads were left with.
class DenormalsFlushed {
 public:
  DenormalsFlushed() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    if (flush_denormals()) {
      saved_ = _mm_getcsr();
      if ((saved_ & kFtzDaz) != kFtzDaz) {
        _mm_setcsr(saved_ | kFtzDaz);
        restore_ = true;
      }
    }
#endif
  }
  ~DenormalsFlushed() {
#if defined(__x86_64__) || defined(__i386__)
    if (restore_) _mm_setcsr(saved_);
#endif
  }
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

 private:
  static constexpr unsigned kFtzDaz = 0x8040;  // MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)
  unsigned saved_ = 0;
  bool restore_ = false;
};

// Below this many elements a loop runs on one thread: the fork/join costs more than the work.
inline constexpr Index kParallelGrain = Index{1} << 15;

// Thread t's share [begin, end) of n elements split over `threads`: contiguous ranges that start on 64-byte
// boundaries of float arrays. parallel_ranges splits by it, and so, through it, does every optimizer update;
// CpuBackend::dense_product gives each thread the rows of a weight that its share of the update covers.
struct ThreadShare {
  Index begin, end;
};
inline ThreadShare thread_share(Index n, Index threads, Index t) {
  const Index chunk = (n / threads + 15) / 16 * 16;
  const Index begin = std::min(n, t * chunk);
  return {begin, t + 1 == threads ? n : std::min(n, begin + chunk)};
}

// Thread t's rows [begin, end) of a row-major [rows, cols] matrix whose elements are split by thread_share: the
// rows its share holds most of (a row its share starts or ends in goes to the thread holding more of it).
inline ThreadShare weight_rows(Index rows, Index cols, Index threads, Index t) {
  const ThreadShare s = thread_share(rows * cols, threads, t);
  const auto row = [&](Index element) { return std::min(rows, (element + cols / 2) / cols); };
  return {row(s.begin), t + 1 == threads ? rows : row(s.end)};
}

// Calls kernel(begin, end) over [0, n): on the calling thread alone up to `grain` elements, else once per
// OpenMP thread on its thread_share.
template <class Kernel>
void parallel_ranges(Index n, const Kernel& kernel, Index grain = kParallelGrain) {
  if (n <= grain) {
    const DenormalsFlushed flushed;
    kernel(Index{0}, n);
    return;
  }
#pragma omp parallel
  {
    const DenormalsFlushed flushed;
    const auto [begin, end] = thread_share(n, omp_get_num_threads(), omp_get_thread_num());
    if (begin < end) kernel(begin, end);
  }
}

// op(i) for i in [begin, end), vectorised. op comes by value so that its captures live in registers, not in
// memory the loop's stores might alias.
template <class Op>
TOWER_VECTOR_CLONES void for_range(Op op, Index begin, Index end) {
#pragma omp simd
  for (Index i = begin; i < end; ++i) op(i);
}

// op(i) for every i in [0, n): vectorised, and split over the OpenMP threads above `grain` elements. op must
// touch only element i of its arrays.
template <class Op>
void elementwise(Index n, const Op& op, Index grain = kParallelGrain) {
  parallel_ranges(n, [&](Index begin, Index end) { for_range(op, begin, end); }, grain);
}

// op(i) for every i in [0, n), split evenly over the OpenMP threads above `grain` calls, not vectorised: for ops
// that each loop over a row or a column of their own (softmax, transpose's index arithmetic).
template <class Op>
void parallel_for(Index n, const Op& op, Index grain) {
#pragma omp parallel if (n > grain)
  {
    const DenormalsFlushed flushed;
#pragma omp for
    for (Index i = 0; i < n; ++i) op(i);
  }
}

// op(r, c) for rows [row_begin, row_end) of a matrix with `cols` columns, the column loop vectorised.
template <class Op>
TOWER_VECTOR_CLONES void for_rows(Op op, Index row_begin, Index row_end, Index cols) {
  for (Index r = row_begin; r < row_end; ++r)
#pragma omp simd
    for (Index c = 0; c < cols; ++c) op(r, c);
}

// op(r, c) for every element of a rows x cols matrix: the rows split over the OpenMP threads above `grain`
// elements. op must touch only element (r, c) of its arrays.
template <class Op>
void rowwise(Index rows, Index cols, const Op& op, Index grain = kParallelGrain) {
  parallel_ranges(rows, [&](Index begin, Index end) { for_rows(op, begin, end, cols); },
                  grain / std::max<Index>(cols, 1));
}

}  // namespace tower::backend::cpu
