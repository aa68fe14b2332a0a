#pragma once
// Pool2D's arithmetic and indexing (Backend::make_pool2d, backend.h). The CUDA backend runs the functors below
// one element per thread (cuda/cuda_pool2d.cu); the CPU backend (cpu/cpu_pool2d.cpp) runs the same window
// geometry and the same arithmetic a pixel's channels at a time, so both give the same bits; and
// tests/backend/pooling_functors_test.cpp runs the functors in host loops against the CPU backend. Images are
// NHWC. A forward functor computes one output element from its flat index; a backward functor computes one input
// element by gathering over the windows that cover it, so every element has one writer, needs no atomics and is
// summed in the same order on every run.
#include <string>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// A half-open range [begin, end) of positions along one axis.
struct Span {
  Index begin, end;
};

// The input positions window `o` covers along one axis, padding excluded: it starts at o * stride - pad_before.
TOWER_HD Span pool_window(Index o, int pool, int stride, int pad_before, Index in) {
  const Index start = o * stride - pad_before, stop = start + pool;
  return {start < 0 ? 0 : start, stop < in ? stop : in};
}

// The windows along one axis that cover input position i: window o covers i when
// o * stride - pad_before <= i < o * stride - pad_before + pool.
TOWER_HD Span covering_windows(Index i, int pool, int stride, int pad_before, Index out) {
  const Index low = i + pad_before - pool + 1;  // o * stride must reach it; negative near the top edge
  const Index first = low <= 0 ? 0 : (low + stride - 1) / stride;
  const Index stop = (i + pad_before) / stride + 1;
  return {first, stop < out ? stop : out};
}

// The flat NHWC index of (n, h, w, c) in an image of height h_size, width w_size and c_size channels.
TOWER_HD Index nhwc(Index n, Index h, Index w, Index c, Index h_size, Index w_size, Index c_size) {
  return ((n * h_size + h) * w_size + w) * c_size + c;
}

// The NHWC coordinates of a flat index.
struct Nhwc {
  Index n, h, w, c;
};
TOWER_HD Nhwc unflatten_nhwc(Index i, Index h_size, Index w_size, Index c_size) {
  const Index c = i % c_size, pixel = i / c_size;
  const Index w = pixel % w_size, row = pixel / w_size;
  return {row / h_size, row % h_size, w, c};
}

// Whether p describes a pooling make_pool2d accepts: positive sizes (batch may be 0), each padding smaller than
// its window (so every window holds an input element) and the output size the window geometry implies.
inline bool pool2d_params_valid(const Pool2DParams& p) {
  const auto implied = [](Index in, int pool, int stride, int pad_a, int pad_b) {
    return (in + pad_a + pad_b - pool) / stride + 1;
  };
  const bool positive = p.batch >= 0 && p.in_h > 0 && p.in_w > 0 && p.channels > 0 && p.out_h > 0 && p.out_w > 0 &&
                        p.pool_h > 0 && p.pool_w > 0 && p.stride_h > 0 && p.stride_w > 0;
  const bool pads = p.pad_top >= 0 && p.pad_bottom >= 0 && p.pad_left >= 0 && p.pad_right >= 0 &&
                    p.pad_top < p.pool_h && p.pad_bottom < p.pool_h && p.pad_left < p.pool_w && p.pad_right < p.pool_w;
  return positive && pads && implied(p.in_h, p.pool_h, p.stride_h, p.pad_top, p.pad_bottom) == p.out_h &&
         implied(p.in_w, p.pool_w, p.stride_w, p.pad_left, p.pad_right) == p.out_w;
}

// "MaxPool2D [2, 7, 9, 3] -> [2, 3, 4, 3], pool 3x3, strides 2x2, padding (0, 1, 0, 1)", for error messages.
inline std::string describe_pool2d(const Pool2DParams& p) {
  const auto s = [](Index v) { return std::to_string(v); };
  std::string text = p.kind == PoolKind::max ? "MaxPool2D " : "AveragePool2D ";
  text += Shape{p.batch, p.in_h, p.in_w, p.channels}.to_string();
  text += " -> " + Shape{p.batch, p.out_h, p.out_w, p.channels}.to_string();
  return text + ", pool " + s(p.pool_h) + "x" + s(p.pool_w) + ", strides " + s(p.stride_h) + "x" + s(p.stride_w) +
         ", padding (" + s(p.pad_top) + ", " + s(p.pad_bottom) + ", " + s(p.pad_left) + ", " + s(p.pad_right) + ")";
}

// y[i] = the largest input of output i's window, the first in row-major window order on ties (padding never
// wins); argmax[i], unless argmax is null, receives its flat input index for MaxPool2DBackward.
struct MaxPool2D {
  Pool2DParams p;
  const float* x;
  float* y;
  Index* argmax;
  TOWER_HD void operator()(Index i) const {
    const Nhwc o = unflatten_nhwc(i, p.out_h, p.out_w, p.channels);
    const Span rows = pool_window(o.h, p.pool_h, p.stride_h, p.pad_top, p.in_h);
    const Span cols = pool_window(o.w, p.pool_w, p.stride_w, p.pad_left, p.in_w);
    Index best = nhwc(o.n, rows.begin, cols.begin, o.c, p.in_h, p.in_w, p.channels);
    float best_value = x[best];
    for (Index h = rows.begin; h < rows.end; ++h)
      for (Index w = cols.begin; w < cols.end; ++w) {
        const Index j = nhwc(o.n, h, w, o.c, p.in_h, p.in_w, p.channels);
        if (x[j] > best_value) {
          best_value = x[j];
          best = j;
        }
      }
    y[i] = best_value;
    if (argmax) argmax[i] = best;
  }
};

// y[i] = the mean of output i's window over its input elements only (Keras' "same": padding is not counted).
struct AveragePool2D {
  Pool2DParams p;
  const float* x;
  float* y;
  TOWER_HD void operator()(Index i) const {
    const Nhwc o = unflatten_nhwc(i, p.out_h, p.out_w, p.channels);
    const Span rows = pool_window(o.h, p.pool_h, p.stride_h, p.pad_top, p.in_h);
    const Span cols = pool_window(o.w, p.pool_w, p.stride_w, p.pad_left, p.in_w);
    float sum = 0.f;
    for (Index h = rows.begin; h < rows.end; ++h)
      for (Index w = cols.begin; w < cols.end; ++w) sum += x[nhwc(o.n, h, w, o.c, p.in_h, p.in_w, p.channels)];
    y[i] = sum / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
  }
};

// dx[i] = the sum of dy over the windows whose maximum input i was (argmax from MaxPool2D), 0 if none.
struct MaxPool2DBackward {
  Pool2DParams p;
  const float* dy;
  const Index* argmax;
  float* dx;
  TOWER_HD void operator()(Index i) const {
    const Nhwc in = unflatten_nhwc(i, p.in_h, p.in_w, p.channels);
    const Span rows = covering_windows(in.h, p.pool_h, p.stride_h, p.pad_top, p.out_h);
    const Span cols = covering_windows(in.w, p.pool_w, p.stride_w, p.pad_left, p.out_w);
    float sum = 0.f;
    for (Index oh = rows.begin; oh < rows.end; ++oh)
      for (Index ow = cols.begin; ow < cols.end; ++ow) {
        const Index o = nhwc(in.n, oh, ow, in.c, p.out_h, p.out_w, p.channels);
        if (argmax[o] == i) sum += dy[o];
      }
    dx[i] = sum;
  }
};

// dx[i] = the sum over the windows covering input i of dy divided by that window's count of input elements.
struct AveragePool2DBackward {
  Pool2DParams p;
  const float* dy;
  float* dx;
  TOWER_HD void operator()(Index i) const {
    const Nhwc in = unflatten_nhwc(i, p.in_h, p.in_w, p.channels);
    const Span rows = covering_windows(in.h, p.pool_h, p.stride_h, p.pad_top, p.out_h);
    const Span cols = covering_windows(in.w, p.pool_w, p.stride_w, p.pad_left, p.out_w);
    float sum = 0.f;
    for (Index oh = rows.begin; oh < rows.end; ++oh) {
      const Span window_rows = pool_window(oh, p.pool_h, p.stride_h, p.pad_top, p.in_h);
      for (Index ow = cols.begin; ow < cols.end; ++ow) {
        const Span window_cols = pool_window(ow, p.pool_w, p.stride_w, p.pad_left, p.in_w);
        const Index count = (window_rows.end - window_rows.begin) * (window_cols.end - window_cols.begin);
        sum += dy[nhwc(in.n, oh, ow, in.c, p.out_h, p.out_w, p.channels)] / static_cast<float>(count);
      }
    }
    dx[i] = sum;
  }
};

}  // namespace tower::backend::math
