#include "api/backend/conv2d_checks.h"

#include <stdexcept>

namespace tower::backend {

std::string describe(const Conv2DParams& p) {
  const Index group_c = p.groups > 0 ? p.in_c / p.groups : p.in_c;
  const auto s = [](int v) { return std::to_string(v); };
  return Shape{p.batch, p.in_h, p.in_w, p.in_c}.to_string() + " * " +
         Shape{p.kernel_h, p.kernel_w, group_c, p.out_c}.to_string() + " -> " +
         Shape{p.batch, p.out_h, p.out_w, p.out_c}.to_string() + ", strides " + s(p.stride_h) + "x" + s(p.stride_w) +
         ", dilation " + s(p.dilation_h) + "x" + s(p.dilation_w) + ", padding (" + s(p.pad_top) + ", " +
         s(p.pad_bottom) + ", " + s(p.pad_left) + ", " + s(p.pad_right) + "), groups " + s(p.groups) +
         (p.relu ? ", relu" : "");
}

Index conv_out_size(Index in, int kernel, int stride, int dilation, int pad_before, int pad_after) {
  const Index span = static_cast<Index>(kernel - 1) * dilation + 1;
  const Index padded = in + pad_before + pad_after - span;
  return padded < 0 ? 0 : padded / stride + 1;
}

void validate_conv2d(const Conv2DParams& p) {
  const bool positive = p.batch > 0 && p.in_h > 0 && p.in_w > 0 && p.in_c > 0 && p.out_c > 0 && p.kernel_h > 0 &&
                        p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.dilation_h > 0 && p.dilation_w > 0 &&
                        p.groups > 0;
  const bool pads = p.pad_top >= 0 && p.pad_bottom >= 0 && p.pad_left >= 0 && p.pad_right >= 0;
  if (!positive || !pads || p.in_c % p.groups != 0 || p.out_c % p.groups != 0 ||
      p.out_h != conv_out_size(p.in_h, p.kernel_h, p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom) ||
      p.out_w != conv_out_size(p.in_w, p.kernel_w, p.stride_w, p.dilation_w, p.pad_left, p.pad_right) ||
      p.out_h <= 0 || p.out_w <= 0)
    throw std::invalid_argument("make_conv2d: inconsistent parameters: " + describe(p));
}

}  // namespace tower::backend
