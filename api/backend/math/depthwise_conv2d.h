#pragma once
// Depthwise convolution (Conv2DParams with groups == in_c: Keras' DepthwiseConv2D and a Conv2D whose groups equal
// its input channels) on NHWC tensors, forward and data gradient, as the CUDA backend runs it
// (cuda_depthwise_conv2d.cu); tests/backend/depthwise_conv2d_test.cpp runs the same functors on the CPU against the
// CPU backend's convolution. The padding, symmetric or not, is folded into the indexing: nothing is copied.
//
// Output channel oc reads input channel oc / multiplier (multiplier = out_c / in_c), and Keras' kernel
// [kh, kw, 1, out_c] holds its taps at (kh * kernel_w + kw) * out_c + oc. V consecutive channels are one item: V is
// 4 (128-bit loads and stores) when the multiplier is 1 and the channels a multiple of 4, else 1.
#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// Whether the V = 4 form applies to p (the pointers' alignment is the caller's to check).
inline bool depthwise_by_four(const Conv2DParams& p) { return p.out_c == p.in_c && p.in_c % 4 == 0; }

// Whether these functors take p: a depthwise convolution whose items and positions fit the 32-bit arithmetic they
// index with (a GPU divides 32-bit numbers several times faster than 64-bit ones).
inline bool depthwise_fits(const Conv2DParams& p) {
  constexpr Index kMost = Index{1} << 31;
  return p.groups > 1 && p.groups == p.in_c && p.out_c % p.in_c == 0 && p.batch * p.out_h * p.out_w * p.out_c < kMost &&
         p.batch * p.in_h * p.in_w * p.in_c < kMost;
}

// y[b, oh, ow, oc] = sum over the taps of x[b, oh * stride - pad_top + kh * dilation, ..., oc / multiplier] *
// w[kh, kw, oc], + bias[oc] when bias is not null, then max(., 0) when p.relu; over batch * out_h * out_w *
// out_c / V items.
template <int V>
struct DepthwiseConv2DForward {
  const float *x, *w, *bias;
  float* y;
  Conv2DParams p;
  TOWER_HD void operator()(Index i) const {
    const unsigned item = static_cast<unsigned>(i), groups = static_cast<unsigned>(p.out_c / V);
    const unsigned pixel = item / groups, oc = (item - pixel * groups) * V;
    const unsigned out_w = static_cast<unsigned>(p.out_w), out_h = static_cast<unsigned>(p.out_h);
    const unsigned row = pixel / out_w, ow = pixel - row * out_w, b = row / out_h, oh = row - b * out_h;
    const unsigned multiplier = static_cast<unsigned>(p.out_c / p.in_c);
    Floats<V> acc;
    for (int v = 0; v < V; ++v) acc.v[v] = bias ? bias[oc + v] : 0.f;
    for (int kh = 0; kh < p.kernel_h; ++kh) {
      const int ih = static_cast<int>(oh) * p.stride_h - p.pad_top + kh * p.dilation_h;
      if (ih < 0 || ih >= p.in_h) continue;
      for (int kw = 0; kw < p.kernel_w; ++kw) {
        const int iw = static_cast<int>(ow) * p.stride_w - p.pad_left + kw * p.dilation_w;
        if (iw < 0 || iw >= p.in_w) continue;
        const float* in_row = x + ((Index{b} * p.in_h + ih) * p.in_w + iw) * p.in_c;
        const Floats<V> taps = load<V>(w + (Index{kh} * p.kernel_w + kw) * p.out_c + oc);
        if constexpr (V == 1) {
          acc.v[0] += in_row[oc / multiplier] * taps.v[0];
        } else {
          const Floats<V> in = load<V>(in_row + oc);
          for (int v = 0; v < V; ++v) acc.v[v] += in.v[v] * taps.v[v];
        }
      }
    }
    if (p.relu)
      for (int v = 0; v < V; ++v) acc.v[v] = acc.v[v] > 0.f ? acc.v[v] : 0.f;
    store<V>(y + Index{pixel} * p.out_c + oc, acc);
  }
};

// dx[b, ih, iw, ic] = sum over the multiplier's channels oc of ic and the taps whose output position
// oh = (ih + pad_top - kh * dilation) / stride is whole and inside dy, of dy[b, oh, ow, oc] * w[kh, kw, oc]; over
// batch * in_h * in_w * in_c / V items.
template <int V>
struct DepthwiseConv2DBackwardData {
  const float *dy, *w;
  float* dx;
  Conv2DParams p;
  TOWER_HD void operator()(Index i) const {
    const unsigned item = static_cast<unsigned>(i), groups = static_cast<unsigned>(p.in_c / V);
    const unsigned pixel = item / groups, ic = (item - pixel * groups) * V;
    const unsigned in_w = static_cast<unsigned>(p.in_w), in_h = static_cast<unsigned>(p.in_h);
    const unsigned row = pixel / in_w, iw = pixel - row * in_w, b = row / in_h, ih = row - b * in_h;
    const unsigned multiplier = static_cast<unsigned>(p.out_c / p.in_c);
    Floats<V> acc;
    for (int v = 0; v < V; ++v) acc.v[v] = 0.f;
    for (int kh = 0; kh < p.kernel_h; ++kh) {
      const int th = static_cast<int>(ih) + p.pad_top - kh * p.dilation_h;
      if (th < 0) continue;
      const int oh = p.stride_h == 1 ? th : th / p.stride_h;
      if (oh * p.stride_h != th || oh >= p.out_h) continue;
      for (int kw = 0; kw < p.kernel_w; ++kw) {
        const int tw = static_cast<int>(iw) + p.pad_left - kw * p.dilation_w;
        if (tw < 0) continue;
        const int ow = p.stride_w == 1 ? tw : tw / p.stride_w;
        if (ow * p.stride_w != tw || ow >= p.out_w) continue;
        const float* grad = dy + ((Index{b} * p.out_h + oh) * p.out_w + ow) * p.out_c;
        const float* taps = w + (Index{kh} * p.kernel_w + kw) * p.out_c;
        if constexpr (V == 1) {
          for (unsigned j = 0; j < multiplier; ++j) acc.v[0] += grad[ic * multiplier + j] * taps[ic * multiplier + j];
        } else {
          const Floats<V> g = load<V>(grad + ic), t = load<V>(taps + ic);
          for (int v = 0; v < V; ++v) acc.v[v] += g.v[v] * t.v[v];
        }
      }
    }
    store<V>(dx + Index{pixel} * p.in_c + ic, acc);
  }
};

}  // namespace tower::backend::math
