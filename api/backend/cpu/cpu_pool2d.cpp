#include "api/backend/cpu/cpu_backend.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include "api/backend/cpu/loops.h"
#include "api/backend/math/pooling.h"

namespace tower::backend::cpu {

namespace {

using math::covering_windows;
using math::nhwc;
using math::pool_window;
using math::Span;

// NHWC pooling, one image row at a time: the rows are split over the OpenMP threads and every loop over a pixel's
// channels is vectorised. Each function below computes, for all channels of one pixel, what the functor of the
// same name in math/pooling.h computes for one element, in the same order and with the same operations, so the
// CPU and CUDA backends give the same bits (oneDNN 2.6's NHWC pooling took about as long as the convolutions in
// the convnet's step on AVX2, and three times as long as this kernel; bench/RESULTS.md).

// MaxPool2D over output row (n, oh); argmax (null in inference) receives each maximum's flat input index.
TOWER_VECTOR_CLONES void max_pool_row(const Pool2DParams& p, const float* x, float* y, Index* argmax, Index n,
                                      Index oh) {
  const Index c_size = p.channels;
  const Span rows = pool_window(oh, p.pool_h, p.stride_h, p.pad_top, p.in_h);
  for (Index ow = 0; ow < p.out_w; ++ow) {
    const Span cols = pool_window(ow, p.pool_w, p.stride_w, p.pad_left, p.in_w);
    const Index o = nhwc(n, oh, ow, 0, p.out_h, p.out_w, c_size);
    const Index first = nhwc(n, rows.begin, cols.begin, 0, p.in_h, p.in_w, c_size);
    float* best = y + o;
#pragma omp simd
    for (Index c = 0; c < c_size; ++c) best[c] = x[first + c];
    if (argmax) {
      Index* arg = argmax + o;
#pragma omp simd
      for (Index c = 0; c < c_size; ++c) arg[c] = first + c;
      for (Index h = rows.begin; h < rows.end; ++h)
        for (Index w = cols.begin; w < cols.end; ++w) {
          const Index j = nhwc(n, h, w, 0, p.in_h, p.in_w, c_size);
#pragma omp simd
          for (Index c = 0; c < c_size; ++c) {
            const float v = x[j + c];
            const bool larger = v > best[c];
            best[c] = larger ? v : best[c];
            arg[c] = larger ? j + c : arg[c];
          }
        }
    } else {
      for (Index h = rows.begin; h < rows.end; ++h)
        for (Index w = cols.begin; w < cols.end; ++w) {
          const float* in = x + nhwc(n, h, w, 0, p.in_h, p.in_w, c_size);
#pragma omp simd
          for (Index c = 0; c < c_size; ++c) best[c] = in[c] > best[c] ? in[c] : best[c];
        }
    }
  }
}

// AveragePool2D over output row (n, oh).
TOWER_VECTOR_CLONES void average_pool_row(const Pool2DParams& p, const float* x, float* y, Index n, Index oh) {
  const Index c_size = p.channels;
  const Span rows = pool_window(oh, p.pool_h, p.stride_h, p.pad_top, p.in_h);
  for (Index ow = 0; ow < p.out_w; ++ow) {
    const Span cols = pool_window(ow, p.pool_w, p.stride_w, p.pad_left, p.in_w);
    float* sum = y + nhwc(n, oh, ow, 0, p.out_h, p.out_w, c_size);
#pragma omp simd
    for (Index c = 0; c < c_size; ++c) sum[c] = 0.f;
    for (Index h = rows.begin; h < rows.end; ++h)
      for (Index w = cols.begin; w < cols.end; ++w) {
        const float* in = x + nhwc(n, h, w, 0, p.in_h, p.in_w, c_size);
#pragma omp simd
        for (Index c = 0; c < c_size; ++c) sum[c] += in[c];
      }
    const float count = static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
#pragma omp simd
    for (Index c = 0; c < c_size; ++c) sum[c] = sum[c] / count;
  }
}

// MaxPool2DBackward over input row (n, h): each input gathers dy from the windows whose argmax it is.
TOWER_VECTOR_CLONES void max_pool_backward_row(const Pool2DParams& p, const float* dy, const Index* argmax,
                                               float* dx, Index n, Index h) {
  const Index c_size = p.channels;
  const Span rows = covering_windows(h, p.pool_h, p.stride_h, p.pad_top, p.out_h);
  for (Index w = 0; w < p.in_w; ++w) {
    const Span cols = covering_windows(w, p.pool_w, p.stride_w, p.pad_left, p.out_w);
    const Index i = nhwc(n, h, w, 0, p.in_h, p.in_w, c_size);
    float* sum = dx + i;
#pragma omp simd
    for (Index c = 0; c < c_size; ++c) sum[c] = 0.f;
    for (Index oh = rows.begin; oh < rows.end; ++oh)
      for (Index ow = cols.begin; ow < cols.end; ++ow) {
        const Index o = nhwc(n, oh, ow, 0, p.out_h, p.out_w, c_size);
        // Adding 0 where the functor adds nothing leaves the sum's bits alone: it starts at +0 and never
        // becomes -0.
#pragma omp simd
        for (Index c = 0; c < c_size; ++c) sum[c] += argmax[o + c] == i + c ? dy[o + c] : 0.f;
      }
  }
}

// AveragePool2DBackward over input row (n, h).
TOWER_VECTOR_CLONES void average_pool_backward_row(const Pool2DParams& p, const float* dy, float* dx, Index n,
                                                   Index h) {
  const Index c_size = p.channels;
  const Span rows = covering_windows(h, p.pool_h, p.stride_h, p.pad_top, p.out_h);
  for (Index w = 0; w < p.in_w; ++w) {
    const Span cols = covering_windows(w, p.pool_w, p.stride_w, p.pad_left, p.out_w);
    float* sum = dx + nhwc(n, h, w, 0, p.in_h, p.in_w, c_size);
#pragma omp simd
    for (Index c = 0; c < c_size; ++c) sum[c] = 0.f;
    for (Index oh = rows.begin; oh < rows.end; ++oh) {
      const Span window_rows = pool_window(oh, p.pool_h, p.stride_h, p.pad_top, p.in_h);
      for (Index ow = cols.begin; ow < cols.end; ++ow) {
        const Span window_cols = pool_window(ow, p.pool_w, p.stride_w, p.pad_left, p.in_w);
        const float count =
            static_cast<float>((window_rows.end - window_rows.begin) * (window_cols.end - window_cols.begin));
        const float* g = dy + nhwc(n, oh, ow, 0, p.out_h, p.out_w, c_size);
#pragma omp simd
        for (Index c = 0; c < c_size; ++c) sum[c] += g[c] / count;
      }
    }
  }
}

// row(n, r) for every image n and row r < rows_per_image, split over the OpenMP threads when the pass touches
// more than kParallelGrain elements.
template <class Row>
void for_each_row(Index batch, Index rows_per_image, Index elements, const Row& row) {
  const Index rows = batch * rows_per_image;
#pragma omp parallel if (elements > kParallelGrain)
  {
    const DenormalsFlushed flushed;
#pragma omp for schedule(static)
    for (Index r = 0; r < rows; ++r) row(r / rows_per_image, r % rows_per_image);
  }
}

// Max pooling keeps the flat input index of each window's maximum from a training forward (argmax, owned by the
// op), as the CUDA backend does; both backwards gather over the windows covering each input element.
class CpuPool2D final : public Pool2DOp {
 public:
  explicit CpuPool2D(const Pool2DParams& p)
      : p_(p),
        x_size_(p.batch * p.in_h * p.in_w * p.channels),
        y_size_(p.batch * p.out_h * p.out_w * p.channels),
        argmax_(p.kind == PoolKind::max ? static_cast<std::size_t>(y_size_) : 0) {}

  void forward(const float* x, float* y, bool training) override {
    if (training) has_argmax_ = true;
    const Pool2DParams& p = p_;
    const Index work = x_size_ + y_size_;
    if (p.kind == PoolKind::average) {
      for_each_row(p.batch, p.out_h, work, [&](Index n, Index oh) { average_pool_row(p, x, y, n, oh); });
      return;
    }
    Index* argmax = training ? argmax_.data() : nullptr;
    for_each_row(p.batch, p.out_h, work, [&](Index n, Index oh) { max_pool_row(p, x, y, argmax, n, oh); });
  }

  void backward(const float* dy, float* dx) override {
    const Pool2DParams& p = p_;
    const Index work = x_size_ + y_size_;
    if (p.kind == PoolKind::average) {
      for_each_row(p.batch, p.in_h, work, [&](Index n, Index h) { average_pool_backward_row(p, dy, dx, n, h); });
      return;
    }
    if (!has_argmax_)
      throw std::logic_error(math::describe_pool2d(p) + " backward needs a preceding forward with training = true");
    const Index* argmax = argmax_.data();
    for_each_row(p.batch, p.in_h, work, [&](Index n, Index h) { max_pool_backward_row(p, dy, argmax, dx, n, h); });
  }

 private:
  Pool2DParams p_;
  Index x_size_, y_size_;
  std::vector<Index> argmax_;
  bool has_argmax_ = false;
};

}  // namespace

std::unique_ptr<Pool2DOp> CpuBackend::make_pool2d(const Pool2DParams& p) {
  if (!math::pool2d_params_valid(p))
    throw std::invalid_argument("inconsistent pooling parameters: " + math::describe_pool2d(p));
  return std::make_unique<CpuPool2D>(p);
}

}  // namespace tower::backend::cpu
