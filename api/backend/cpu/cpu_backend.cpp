#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/threads_on_this_thread.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/backend/cpu/dnnl_context.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/broadcast.h"
#include "api/backend/math/activations.h"
#include "api/backend/math/data_movement.h"
#include "api/backend/math/dropout.h"
#include "api/backend/math/elementwise.h"
#include "api/backend/math/global_pool.h"
#include "api/backend/math/lrn.h"
#include "api/backend/math/softmax.h"

namespace tower::backend {

namespace cpu {

DnnlContext& dnnl_context() {
  static DnnlContext context;
  return context;
}

void CpuBackend::gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, float alpha, const float* a,
                      Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                          ldb, beta, c, ldc);
  if (status != dnnl_success)
    throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(status)) +
                             ") for m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
}

void CpuBackend::gemm_batched(bool trans_a, bool trans_b, Index batch, Index m, Index n, Index k, float alpha,
                              const float* a, Index lda, Index stride_a, const float* b, Index ldb, Index stride_b,
                              float beta, float* c, Index ldc, Index stride_c) {
  const auto product = [&](Index i) {
    gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
  };
  const Index threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // Small products run side by side, each on one thread (oneDNN's sgemm runs on the calling thread alone inside a
  // parallel region); a large one keeps every thread busy by itself, so a few of those run one after another. Many
  // large ones (attention's per-head products) run side by side too: one parallel region in place of one per
  // product, whose start and end cost most when other processes share the cores.
  const bool large = m * n * k > (Index{1} << 20);
  if (threads == 1 || batch < 2 || (large && batch < 4 * threads)) {
    for (Index i = 0; i < batch; ++i) product(i);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast<int>(std::min(threads, batch))) schedule(static)
  for (Index i = 0; i < batch; ++i) {
    try {
      product(i);
    } catch (...) {
#pragma omp critical(tower_gemm_batched)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void CpuBackend::dense_product(DenseProduct which, Index rows, Index in, Index out, const float* a, const float* b,
                               float* c, const DenseEpilogue& epilogue) {
  const Index threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // Split when an optimizer's update splits W over the threads (elementwise's grain). The forward split leaves each
  // thread a partial product of all of c to add up: only while those stay small beside W.
  const bool split = threads > 1 && rows > 0 && in * out > kParallelGrain &&
                     (which != DenseProduct::forward || threads * rows <= 4 * in);
  if (!split) return dense_product_by_gemm(*this, which, rows, in, out, a, b, c, epilogue);
  // Thread t's products run on rows [k0, k1) of W and dW, the rows of its thread_share of W's elements: the forward
  // on columns [k0, k1) of x, each thread's partial c (thread 0's in c itself) added up afterwards with the
  // epilogue, by rows; the kernel gradient's rows [k0, k1); the input gradient's columns [k0, k1). Each gemm runs
  // on its one thread.
  thread_local std::vector<float> partials;
  if (which == DenseProduct::forward) partials.resize(static_cast<std::size_t>((threads - 1) * rows * out));
  float* const scratch = partials.data();  // the calling thread's: a thread_local named in the region is another's
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    const Index team = omp_get_num_threads(), t = omp_get_thread_num();
    const auto [k0, k1] = weight_rows(in, out, team, t);
    try {
      const bool partial = which == DenseProduct::forward && t > 0;
      dense_gemm_rows(*this, which, rows, in, out, k0, k1, a, b, partial ? scratch + (t - 1) * rows * out : c);
    } catch (...) {
#pragma omp critical(tower_dense_product)
      if (!error) error = std::current_exception();
    }
    if (which == DenseProduct::forward) {
#pragma omp barrier
      const auto [r0, r1] = thread_share(rows, team, t);
      if (!error && r0 < r1) {
        const DenormalsFlushed flushed;  // Tower's loops only: oneDNN's products compute denormals either way
        for (Index s = 1; s < team; ++s)
          for_range(math::Add{c, scratch + (s - 1) * rows * out, c}, r0 * out, r1 * out);
        if (epilogue.bias) {
          const math::AddBias f{c, epilogue.bias, out};
          for_rows([f](Index r, Index col) { f.at(r, col); }, r0, r1, out);
        }
        if (epilogue.activation != ActivationKind::linear)
          // The range as plain values: Clang before 16 cannot capture structured bindings.
          math::visit_activation(epilogue.activation, epilogue.params, [&, begin = r0 * out, end = r1 * out](auto f) {
            for_range(math::ActivationForward<decltype(f)>{f, c, c}, begin, end);
          });
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

void CpuBackend::fill(float* y, Index n, float value) { elementwise(n, math::Fill{y, value}); }

void CpuBackend::fill_bytes(void* y, std::size_t bytes, unsigned char value) { std::memset(y, value, bytes); }

void CpuBackend::add(const float* a, const float* b, float* y, Index n) { elementwise(n, math::Add{a, b, y}); }

void CpuBackend::sub(const float* a, const float* b, float* y, Index n) { elementwise(n, math::Sub{a, b, y}); }

void CpuBackend::mul(const float* a, const float* b, float* y, Index n) { elementwise(n, math::Mul{a, b, y}); }

namespace {

// A broadcast whose last axis each operand reads densely or stretches (a bias over rows, a per-row scale), row by
// row: each row's operand offsets from its coordinates once, then the row in a vectorised loop.
template <BinaryOp Op>
void broadcast_rows(const float* a, const float* b, float* y, const Broadcast& s, Index rows, Index cols) {
  const Index step_a = s.a[s.rank - 1], step_b = s.b[s.rank - 1];
  parallel_ranges(
      rows,
      [&](Index begin, Index end) {
        for (Index r = begin; r < end; ++r) {
          Index rest = r, offset_a = 0, offset_b = 0;
          for (int k = s.rank - 2; k >= 0; --k) {
            const Index coordinate = rest % s.dims[k];
            offset_a += coordinate * s.a[k];
            offset_b += coordinate * s.b[k];
            rest /= s.dims[k];
          }
          const float* ra = a + offset_a;
          const float* rb = b + offset_b;
          float* ry = y + r * cols;
          if (step_a != 0 && step_b != 0) {
#pragma omp simd
            for (Index c = 0; c < cols; ++c) ry[c] = math::binary_op(Op, ra[c], rb[c]);
          } else if (step_a != 0) {
            const float vb = rb[0];
#pragma omp simd
            for (Index c = 0; c < cols; ++c) ry[c] = math::binary_op(Op, ra[c], vb);
          } else if (step_b != 0) {
            const float va = ra[0];
#pragma omp simd
            for (Index c = 0; c < cols; ++c) ry[c] = math::binary_op(Op, va, rb[c]);
          } else {
            const float v = math::binary_op(Op, ra[0], rb[0]);
            for (Index c = 0; c < cols; ++c) ry[c] = v;
          }
        }
      },
      std::max<Index>(1, kParallelGrain / cols));
}

template <BinaryOp... Ops>
bool broadcast_rows_of(BinaryOp op, const float* a, const float* b, float* y, const Broadcast& s, Index rows,
                       Index cols) {
  return ((op == Ops && (broadcast_rows<Ops>(a, b, y, s, rows, cols), true)) || ...);
}

}  // namespace

void CpuBackend::broadcast_binary(BinaryOp op, const float* a, const float* b, float* y, const Broadcast& s) {
  Index n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  const Index cols = s.rank > 0 ? s.dims[s.rank - 1] : 1;
  const auto dense_or_stretched = [](Index step) { return step == 0 || step == 1; };
  if (cols >= 16 && n > 0 && dense_or_stretched(s.a[s.rank - 1]) && dense_or_stretched(s.b[s.rank - 1]) &&
      broadcast_rows_of<BinaryOp::add, BinaryOp::subtract, BinaryOp::multiply, BinaryOp::divide, BinaryOp::maximum,
                        BinaryOp::minimum, BinaryOp::equal, BinaryOp::power, BinaryOp::not_equal, BinaryOp::less,
                        BinaryOp::less_equal, BinaryOp::greater, BinaryOp::greater_equal>(op, a, b, y, s, n / cols,
                                                                                            cols))
    return;
  elementwise(n, math::BroadcastBinary{op, a, b, y, s});
}

void CpuBackend::unary(UnaryOp op, const float* x, float* y, Index n) { elementwise(n, math::Unary{op, x, y}); }

void CpuBackend::select(const float* cond, const float* a, const float* b, float* y, Index n) {
  elementwise(n, math::Select{cond, a, b, y});
}

void CpuBackend::broadcast_reduce(const float* dy, float* dx, const Broadcast& s) {
  Index n = 1, each = 1;
  for (int k = 0; k < s.rank; ++k) (s.a[k] == 0 ? each : n) *= s.dims[k];
  const Index cols = s.rank > 0 ? s.dims[s.rank - 1] : 1;
  if (s.rank > 0 && s.a[s.rank - 1] != 0 && cols >= 16 && n > 0) {
    // The last axis is kept (a squeeze-and-excitation gate's gradient, a mean over H and W): each row of dx adds
    // up whole rows of dy, element by element in a vectorised loop, in the per-element functor's order (the
    // reduced positions in row-major order, in double), so the sums are the functor's to the bit.
    Index out_stride[kMaxBroadcastRank];
    for (Index k = s.rank - 1, stride = 1; k >= 0; --k) {
      out_stride[k] = stride;
      stride *= s.dims[k];
    }
    parallel_ranges(
        n / cols,
        [&](Index begin, Index end) {
          std::vector<double> sum(static_cast<std::size_t>(cols));
          for (Index q = begin; q < end; ++q) {
            Index rest = q, base = 0;
            for (int k = s.rank - 2; k >= 0; --k) {
              if (s.a[k] == 0) continue;
              base += rest % s.dims[k] * out_stride[k];
              rest /= s.dims[k];
            }
            std::fill(sum.begin(), sum.end(), 0.0);
            for (Index t = 0; t < each; ++t) {
              Index left = t, offset = base;
              for (int k = s.rank - 2; k >= 0; --k) {
                if (s.a[k] != 0) continue;
                offset += left % s.dims[k] * out_stride[k];
                left /= s.dims[k];
              }
              const float* row = dy + offset;
              double* acc = sum.data();
#pragma omp simd
              for (Index c = 0; c < cols; ++c) acc[c] += row[c];
            }
            float* out = dx + q * cols;
            for (Index c = 0; c < cols; ++c) out[c] = static_cast<float>(sum[static_cast<std::size_t>(c)]);
          }
        },
        std::max<Index>(1, kParallelGrain / std::max<Index>(each * cols, 1)));
    return;
  }
  parallel_for(n, math::BroadcastReduce{dy, dx, s}, std::max<Index>(1, kParallelGrain / std::max<Index>(each, 1)));
}

void CpuBackend::axpby(float alpha, const float* x, float beta, float* y, Index n) {
  if (beta == 0.f)
    elementwise(n, math::Scale{alpha, x, y});
  else
    elementwise(n, math::Axpby{alpha, x, beta, y});
}

void CpuBackend::scale_shift(const float* x, float scale, float shift, float* y, Index n) {
  elementwise(n, math::ScaleShift{x, scale, shift, y});
}

void CpuBackend::add_bias(float* y, const float* bias, Index rows, Index cols) {
  const math::AddBias f{y, bias, cols};
  rowwise(rows, cols, [f](Index r, Index c) { f.at(r, c); });
}

namespace {
// column_sums over the columns [c0, c1), in one pass over the rows.
TOWER_VECTOR_CLONES void column_band_sums(const float* dy, float* db, Index rows, Index cols, Index c0, Index c1) {
  std::fill(db + c0, db + c1, 0.f);
  for (Index r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
#pragma omp simd
    for (Index c = c0; c < c1; ++c) db[c] += row[c];
  }
}
}  // namespace

void column_sums(const float* dy, float* db, Index rows, Index cols) {
  // Each thread sums its own columns over all rows, so no reduction between threads is needed.
  parallel_ranges(
      cols, [&](Index c0, Index c1) { column_band_sums(dy, db, rows, cols, c0, c1); },
      kParallelGrain / std::max<Index>(rows, 1));
}

void CpuBackend::bias_grad(const float* dy, float* db, Index rows, Index cols) { column_sums(dy, db, rows, cols); }

namespace {
// Below this many elements an activation runs on one thread; the transcendental ones cost enough per element to
// be worth splitting sooner than a copy or a compare.
Index activation_grain(ActivationKind kind) {
  return kind == ActivationKind::linear || kind == ActivationKind::relu ? kParallelGrain : kParallelGrain / 8;
}
}  // namespace

void CpuBackend::activation_forward(ActivationKind kind, const ActivationParams& p, const float* x, float* y,
                                    Index n) {
  if (kind == ActivationKind::linear && x == y) return;
  math::visit_activation(kind, p, [&](auto f) {
    elementwise(n, math::ActivationForward<decltype(f)>{f, x, y}, activation_grain(kind));
  });
}

void CpuBackend::activation_backward(ActivationKind kind, const ActivationParams& p, const float* x,
                                     const float* y, const float* dy, float* dx, Index n) {
  if (kind == ActivationKind::linear && dx == dy) return;
  math::visit_activation(kind, p, [&](auto f) {
    elementwise(n, math::ActivationBackward<decltype(f)>{f, x, y, dy, dx}, activation_grain(kind));
  });
}

void CpuBackend::softmax_forward(const float* x, float* y, Index outer, Index axis, Index inner) {
  parallel_for(outer * inner, math::SoftmaxForward{x, y, axis, inner},
               kParallelGrain / 4 / std::max<Index>(axis, 1));
}

void CpuBackend::softmax_backward(const float* y, const float* dy, float* dx, Index outer, Index axis,
                                  Index inner) {
  parallel_for(outer * inner, math::SoftmaxBackward{y, dy, dx, axis, inner},
               kParallelGrain / 4 / std::max<Index>(axis, 1));
}

namespace {
// The number of squares an LRN element sums per window, bounded by the depth (at least 1).
Index lrn_window_size(const LrnParams& p, Index depth) {
  return 2 * std::min(std::max<Index>(depth, 1), p.depth_radius) + 1;
}
}  // namespace

void CpuBackend::lrn_forward(const LrnParams& p, const float* x, float* y, Index positions, Index depth) {
  elementwise(positions * depth, math::LrnForward{x, y, depth, p}, kParallelGrain / lrn_window_size(p, depth));
}

void CpuBackend::lrn_backward(const LrnParams& p, const float* x, const float* y, const float* dy, float* dx,
                              Index positions, Index depth) {
  const Index window = lrn_window_size(p, depth);
  elementwise(positions * depth, math::LrnBackward{x, y, dy, dx, depth, p}, kParallelGrain / window / window);
}

void CpuBackend::dropout_mask(float* mask, Index n, float rate, const std::uint64_t* seed) {
  // Host memory here: the salt is mixed once, and the loop runs the very functor the GPU's seeded one wraps.
  elementwise(n, math::make_dropout_mask(mask, rate, *seed));
}

void CpuBackend::transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) {
  const int rank = shape.rank();
  const Index inner = rank > 1 ? shape[rank - 1] : 0;
  // A permutation that keeps the last axis (attention's [N, T, heads, dim] <-> [N, heads, T, dim]) moves whole rows:
  // each row's place comes from the functor's indexing over the other axes, once per row, not once per element.
  if (rank > 1 && perm.size() == static_cast<std::size_t>(rank) && perm.back() == rank - 1 && inner >= 16) {
    const Shape outer(std::vector<Index>(shape.dims().begin(), shape.dims().end() - 1));
    const math::Transpose rows = math::make_transpose(x, y, outer, std::vector<int>(perm.begin(), perm.end() - 1));
    parallel_ranges(
        outer.numel(),
        [&](Index begin, Index end) {
          for (Index o = begin; o < end; ++o) std::copy_n(x + rows.source(o) * inner, inner, y + o * inner);
        },
        std::max<Index>(1, kParallelGrain / inner));
    return;
  }
  parallel_for(shape.numel(), math::make_transpose(x, y, shape, perm), kParallelGrain);
}

void CpuBackend::copy_strided(const float* src, Index src_inner, float* dst, Index dst_inner, Index dst_offset,
                              Index outer) {
#pragma omp parallel for if (outer * src_inner > kParallelGrain)
  for (Index o = 0; o < outer; ++o)
    std::memcpy(dst + o * dst_inner + dst_offset, src + o * src_inner,
                static_cast<std::size_t>(src_inner) * sizeof(float));
}

void CpuBackend::copy_strided_back(const float* src, Index src_inner, Index src_offset, float* dst,
                                   Index dst_inner, Index outer) {
#pragma omp parallel for if (outer * dst_inner > kParallelGrain)
  for (Index o = 0; o < outer; ++o)
    std::memcpy(dst + o * dst_inner, src + o * src_inner + src_offset,
                static_cast<std::size_t>(dst_inner) * sizeof(float));
}

void CpuBackend::pad2d(const float* x, float* y, Index n, Index h, Index w, Index c, Index out_h, Index out_w,
                       Index top, Index left) {
#pragma omp parallel for collapse(2) if (n * out_h * out_w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index oh = 0; oh < out_h; ++oh) {
      float* yrow = y + ((b * out_h + oh) * out_w) * c;
      const Index ih = oh - top;
      if (ih < 0 || ih >= h) {
        std::memset(yrow, 0, static_cast<std::size_t>(out_w * c) * sizeof(float));
        continue;
      }
      for (Index ow = 0; ow < out_w; ++ow) {
        const Index iw = ow - left;
        float* yp = yrow + ow * c;
        if (iw < 0 || iw >= w)
          std::memset(yp, 0, static_cast<std::size_t>(c) * sizeof(float));
        else
          std::memcpy(yp, x + ((b * h + ih) * w + iw) * c, static_cast<std::size_t>(c) * sizeof(float));
      }
    }
}

void CpuBackend::pad2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, Index out_h,
                                Index out_w, Index top, Index left) {
#pragma omp parallel for collapse(2) if (n * h * w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index ih = 0; ih < h; ++ih)
      for (Index iw = 0; iw < w; ++iw) {
        const Index oh = ih + top, ow = iw + left;
        float* dxp = dx + ((b * h + ih) * w + iw) * c;
        if (oh < 0 || oh >= out_h || ow < 0 || ow >= out_w)
          std::memset(dxp, 0, static_cast<std::size_t>(c) * sizeof(float));
        else
          std::memcpy(dxp, dy + ((b * out_h + oh) * out_w + ow) * c, static_cast<std::size_t>(c) * sizeof(float));
      }
}

void CpuBackend::upsample2d(const float* x, float* y, Index n, Index h, Index w, Index c, int fh, int fw) {
  const Index out_h = h * fh, out_w = w * fw;
#pragma omp parallel for collapse(2) if (n * out_h * out_w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index oh = 0; oh < out_h; ++oh)
      for (Index ow = 0; ow < out_w; ++ow)
        std::memcpy(y + ((b * out_h + oh) * out_w + ow) * c, x + ((b * h + oh / fh) * w + ow / fw) * c,
                    static_cast<std::size_t>(c) * sizeof(float));
}

void CpuBackend::upsample2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, int fh,
                                     int fw) {
  const Index out_h = h * fh, out_w = w * fw;
#pragma omp parallel for collapse(2) if (n * h * w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index ih = 0; ih < h; ++ih)
      for (Index iw = 0; iw < w; ++iw) {
        float* d = dx + ((b * h + ih) * w + iw) * c;
        std::fill(d, d + c, 0.f);
        for (int i = 0; i < fh; ++i)
          for (int j = 0; j < fw; ++j) {
            const float* s = dy + ((b * out_h + ih * fh + i) * out_w + iw * fw + j) * c;
            for (Index k = 0; k < c; ++k) d[k] += s[k];
          }
      }
}

namespace {
// One image's global pooling a row of channels at a time (math/global_pool.h): y's row holds the running
// reductions, so x is read in memory order and the channel loops vectorise.
template <class Reduce>
TOWER_VECTOR_CLONES void pool_image(Reduce reduce, const float* x, float* y, Index positions, Index c) {
#pragma omp simd
  for (Index k = 0; k < c; ++k) y[k] = reduce.init();
  for (Index p = 0; p < positions; ++p)
#pragma omp simd
    for (Index k = 0; k < c; ++k) y[k] = reduce.step(y[k], x[p * c + k]);
#pragma omp simd
  for (Index k = 0; k < c; ++k) y[k] = reduce.finish(y[k]);
}

template <class Reduce>
void pool_images(Reduce reduce, const float* x, float* y, Index n, Index positions, Index c) {
  parallel_for(
      n, [=](Index b) { pool_image(reduce, x + b * positions * c, y + b * c, positions, c); },
      kParallelGrain / std::max<Index>(positions * c, 1));
}

// GlobalMaxPoolBackward for one image, a row of channels at a time; taken has c flags.
TOWER_VECTOR_CLONES void max_pool_backward_image(const float* x, const float* y, const float* dy, float* dx,
                                                 int* taken, Index positions, Index c) {
  std::fill(taken, taken + c, 0);
  for (Index p = 0; p < positions; ++p)
#pragma omp simd
    for (Index k = 0; k < c; ++k)
      dx[p * c + k] = math::GlobalMaxPoolBackward::route(x[p * c + k], y[k], dy[k], taken[k]);
}
}  // namespace

void CpuBackend::global_pool(PoolKind kind, const float* x, float* y, Index n, Index positions, Index c) {
  if (kind == PoolKind::average)
    pool_images(math::AverageOfPositions{1.f / static_cast<float>(positions)}, x, y, n, positions, c);
  else
    pool_images(math::MaxOfPositions{}, x, y, n, positions, c);
}

void CpuBackend::global_pool_backward(PoolKind kind, const float* x, const float* y, const float* dy, float* dx,
                                      Index n, Index positions, Index c) {
  if (kind == PoolKind::average) {
    const math::GlobalAveragePoolBackward f{dy, dx, positions, c, 1.f / static_cast<float>(positions)};
    rowwise(n * positions, c, [f](Index row, Index k) { f.at(row, k); });
    return;
  }
  parallel_ranges(
      n,
      [&](Index begin, Index end) {
        const std::unique_ptr<int[]> taken(new int[static_cast<std::size_t>(c)]);
        for (Index b = begin; b < end; ++b)
          max_pool_backward_image(x + b * positions * c, y + b * c, dy + b * c, dx + b * positions * c, taken.get(),
                                  positions, c);
      },
      kParallelGrain / std::max<Index>(positions * c, 1));
}

const char* vector_loops_isa() {
#if defined(__x86_64__) && !defined(__clang__)
  __builtin_cpu_init();
#ifndef TOWER_VECTOR_CLONES_UP_TO_AVX2
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4 (AVX-512)";
#endif
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2)";
#endif
  return "x86-64 baseline";
}

void CpuBackend::sum(const float* x, float* y, Index n) {
  double s = 0.0;
#pragma omp parallel reduction(+ : s) if (n > kParallelGrain)
  {
    const DenormalsFlushed flushed;
#pragma omp for
    for (Index i = 0; i < n; ++i) s += x[i];
  }
  *y = static_cast<float>(s);
}

}  // namespace cpu



namespace {
int initial_threads() {
  for (const char* var : {"TOWER_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return omp_get_num_procs();
}
std::atomic<int>& thread_setting() {
  static std::atomic<int> n{[] {
    const int t = initial_threads();
    omp_set_num_threads(t);
    return t;
  }()};
  return n;
}
std::atomic<bool>& flush_setting() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("TOWER_FLUSH_DENORMALS");
    return !(v && std::string_view(v) == "0");
  }()};
  return on;
}
}  // namespace

int num_threads() { return thread_setting().load(std::memory_order_relaxed); }

ThreadsOnThisThread::ThreadsOnThisThread(int n) : previous_(omp_get_max_threads()) {
  if (n <= 0) throw std::invalid_argument("ThreadsOnThisThread: " + std::to_string(n) + " is not a positive count");
  if (n != previous_) omp_set_num_threads(n);
}

ThreadsOnThisThread::~ThreadsOnThisThread() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

bool flush_denormals() { return flush_setting().load(std::memory_order_relaxed); }
void set_flush_denormals(bool on) { flush_setting().store(on, std::memory_order_relaxed); }

void set_num_threads(int n) {
  if (n <= 0) throw std::invalid_argument("set_num_threads: " + std::to_string(n) + " is not a positive count");
  thread_setting().store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
}

}  // namespace tower::backend
