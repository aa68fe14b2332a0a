#pragma once
// How the CUDA backend presents a Conv2D to cuDNN (cuda_conv2d.cpp), as plain numbers: free of CUDA headers, so
// the CPU tests (tests/backend/cudnn_conv_layout_test.cpp) check it by running cuDNN's documented arithmetic on
// these numbers in host loops against the CPU backend's convolution.
//
// cuDNN pads both sides of an axis alike, so it gets min(before, after) and, where the padding is asymmetric
// (Keras "same" with an odd total pads one more at the bottom/right), the input goes through a padded copy
// (Backend::pad2d) with the difference as extra rows/columns on the larger side. The padded image is then exactly the one the parameters
// describe. Keras' kernel [kh, kw, in/groups, out] is no cuDNN filter layout (NHWC filters are
// [out, kh, kw, in/groups]), so it is reordered through two strided views of the same logical
// [out, in/groups, kh, kw] tensor.
#include "api/backend/backend.h"

namespace tower::backend::cuda {

// Element strides of a logical [n, c, h, w] tensor, as cudnnSetTensor4dDescriptorEx takes them.
struct Strides4 {
  Index n, c, h, w;
};

struct CudnnConvLayout {
  int pad_h = 0, pad_w = 0;  // cuDNN's padding, on both sides
  int extra_top = 0, extra_bottom = 0, extra_left = 0, extra_right = 0;
  Index padded_h = 0, padded_w = 0;  // the input cuDNN convolves: x, or its padded copy
  Strides4 keras_kernel{};           // [out, in/groups, kh, kw] over Keras' [kh][kw][in/groups][out]
  Strides4 cudnn_filter{};           // [out, in/groups, kh, kw] over cuDNN's NHWC filter [out][kh][kw][in/groups]

  bool padded() const { return extra_top + extra_bottom + extra_left + extra_right > 0; }
};

inline CudnnConvLayout cudnn_conv_layout(const Conv2DParams& p) {
  CudnnConvLayout l;
  l.pad_h = p.pad_top < p.pad_bottom ? p.pad_top : p.pad_bottom;
  l.pad_w = p.pad_left < p.pad_right ? p.pad_left : p.pad_right;
  l.extra_top = p.pad_top - l.pad_h;
  l.extra_bottom = p.pad_bottom - l.pad_h;
  l.extra_left = p.pad_left - l.pad_w;
  l.extra_right = p.pad_right - l.pad_w;
  l.padded_h = p.in_h + l.extra_top + l.extra_bottom;
  l.padded_w = p.in_w + l.extra_left + l.extra_right;
  const Index out = p.out_c, group_in = p.in_c / p.groups;
  l.keras_kernel = {1, out, p.kernel_w * group_in * out, group_in * out};
  l.cudnn_filter = {p.kernel_h * p.kernel_w * group_in, 1, p.kernel_w * group_in, group_in};
  return l;
}

}  // namespace tower::backend::cuda
