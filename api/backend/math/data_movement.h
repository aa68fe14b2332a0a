#pragma once
// Indexing of the data-movement ops: Backend::transpose, copy_strided(_back), pad2d(_backward) and
// upsample2d(_backward). Each functor computes one output element from its flat index (NHWC images), as the
// CUDA backend runs them. The CPU backend runs Transpose itself; for the others it keeps its row copies (memcpy
// of whole channel runs, faster on a CPU), and tests/backend/math_functors_test.cpp checks that these functors
// give the CPU's results bit for bit.
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

inline constexpr int kMaxTransposeRank = 8;

// y = permute(x, perm): y's dimension i is x's dimension perm[i].
struct Transpose {
  const float* x;
  float* y;
  int rank;
  Index out_dims[kMaxTransposeRank];
  Index in_stride_of_out[kMaxTransposeRank];  // x's stride along y's dimension i
  // The index in x of y's element o.
  TOWER_HD Index source(Index o) const {
    Index rem = o, src = 0;
    for (int i = rank - 1; i >= 0; --i) {
      const Index idx = rem % out_dims[i];
      rem /= out_dims[i];
      src += idx * in_stride_of_out[i];
    }
    return src;
  }
  TOWER_HD void operator()(Index o) const { y[o] = x[source(o)]; }
};

// Throws std::invalid_argument unless perm is a permutation of shape's axes and the rank is at most 8.
inline Transpose make_transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) {
  const int r = shape.rank();
  std::vector<bool> seen(perm.size(), false);
  bool valid = r <= kMaxTransposeRank && static_cast<int>(perm.size()) == r;
  for (int axis : perm) {
    valid = valid && axis >= 0 && axis < r && !seen[axis];
    if (valid) seen[axis] = true;
  }
  if (!valid) {
    std::string p;
    for (int axis : perm) p += (p.empty() ? "" : ", ") + std::to_string(axis);
    throw std::invalid_argument("transpose: (" + p + ") is not a permutation of the axes of " + shape.to_string() +
                                " (rank at most 8)");
  }
  Transpose t{x, y, r, {}, {}};
  Index in_strides[kMaxTransposeRank];
  Index s = 1;
  for (int i = r - 1; i >= 0; --i) {
    in_strides[i] = s;
    s *= shape[i];
  }
  for (int i = 0; i < r; ++i) {
    t.out_dims[i] = shape[perm[i]];
    t.in_stride_of_out[i] = in_strides[perm[i]];
  }
  return t;
}

// dst[o, offset + k] = src[o, k] for the outer * src_inner elements of src (Concatenate forward).
struct CopyStrided {
  const float* src;
  Index src_inner;
  float* dst;
  Index dst_inner, dst_offset;
  TOWER_HD void operator()(Index i) const { dst[i / src_inner * dst_inner + dst_offset + i % src_inner] = src[i]; }
};

// dst[o, k] = src[o, offset + k] for the outer * dst_inner elements of dst (Concatenate backward).
struct CopyStridedBack {
  const float* src;
  Index src_inner, src_offset;
  float* dst;
  Index dst_inner;
  TOWER_HD void operator()(Index i) const { dst[i] = src[i / dst_inner * src_inner + src_offset + i % dst_inner]; }
};

// Sizes of an NHWC padding or cropping: x is [n, h, w, c], y is [n, out_h, out_w, c], x's (0, 0) at y's
// (top, left); negative top/left crop.
struct Pad2DShape {
  Index h, w, c, out_h, out_w, top, left;
};

// y[b, oh, ow, k] = x[b, oh - top, ow - left, k], 0 outside x; over y's elements / V items, V consecutive channels an
// item (V = 4 when c is a multiple of 4 and the arrays 16-byte aligned: cuda_elementwise.cu chooses).
template <int V>
struct Pad2D {
  const float* x;
  float* y;
  Pad2DShape s;
  TOWER_HD void operator()(Index i) const {
    const Division pixel = divide(i, s.c / V), column = divide(pixel.quotient, s.out_w), row = divide(column.quotient, s.out_h);
    const Index k = pixel.remainder * V, ow = column.remainder, oh = row.remainder, b = row.quotient;
    const Index ih = oh - s.top, iw = ow - s.left;
    Floats<V> v;
    if (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w) {
      v = load<V>(x + ((b * s.h + ih) * s.w + iw) * s.c + k);
    } else {
      for (int j = 0; j < V; ++j) v.v[j] = 0.f;
    }
    store<V>(y + i * V, v);
  }
};

// dx[b, ih, iw, k] = dy[b, ih + top, iw + left, k], 0 where that falls outside dy (cropped away); over dx's
// elements / V items, as Pad2D's.
template <int V>
struct Pad2DBackward {
  const float* dy;
  float* dx;
  Pad2DShape s;
  TOWER_HD void operator()(Index i) const {
    const Division pixel = divide(i, s.c / V), column = divide(pixel.quotient, s.w), row = divide(column.quotient, s.h);
    const Index k = pixel.remainder * V, iw = column.remainder, ih = row.remainder, b = row.quotient;
    const Index oh = ih + s.top, ow = iw + s.left;
    Floats<V> v;
    if (oh >= 0 && oh < s.out_h && ow >= 0 && ow < s.out_w) {
      v = load<V>(dy + ((b * s.out_h + oh) * s.out_w + ow) * s.c + k);
    } else {
      for (int j = 0; j < V; ++j) v.v[j] = 0.f;
    }
    store<V>(dx + i * V, v);
  }
};

// Nearest-neighbour upsampling of x [n, h, w, c] by (fh, fw) into y [n, h * fh, w * fw, c]; over y's elements.
struct Upsample2D {
  const float* x;
  float* y;
  Index h, w, c;
  int fh, fw;
  TOWER_HD void operator()(Index i) const {
    const Index out_w = w * fw, out_h = h * fh;
    const Index k = i % c, ow = i / c % out_w, oh = i / (c * out_w) % out_h, b = i / (c * out_w * out_h);
    y[i] = x[((b * h + oh / fh) * w + ow / fw) * c + k];
  }
};

// dx[b, ih, iw, k] = the sum of dy over its (fh, fw) block, rows then columns in order from 0; over dx's elements.
struct Upsample2DBackward {
  const float* dy;
  float* dx;
  Index h, w, c;
  int fh, fw;
  TOWER_HD void operator()(Index i) const {
    const Index out_w = w * fw, out_h = h * fh;
    const Index k = i % c, iw = i / c % w, ih = i / (c * w) % h, b = i / (c * w * h);
    float sum = 0.f;
    for (int u = 0; u < fh; ++u)
      for (int v = 0; v < fw; ++v) sum += dy[((b * out_h + ih * fh + u) * out_w + iw * fw + v) * c + k];
    dx[i] = sum;
  }
};

}  // namespace tower::backend::math
