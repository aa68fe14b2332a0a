#include "layers/conv_utils.h"

#include <gtest/gtest.h>

namespace tower::layers::detail {
namespace {

void expect_axis(Index in, int kernel, int stride, int dilation, bool same, Index out, int before, int after) {
  SCOPED_TRACE("in " + std::to_string(in) + " kernel " + std::to_string(kernel) + " stride " +
               std::to_string(stride) + " dilation " + std::to_string(dilation) + (same ? " same" : " valid"));
  const ConvAxis a = conv_axis(in, kernel, stride, dilation, same);
  EXPECT_EQ(a.out, out);
  EXPECT_EQ(a.pad_before, before);
  EXPECT_EQ(a.pad_after, after);
}

// Values as tf.nn.conv2d computes them (SAME: out = ceil(in / stride), the odd padding pixel at the end).
TEST(ConvUtils, SamePaddingMatchesTensorFlow) {
  expect_axis(224, 3, 2, 1, true, 112, 0, 1);
  expect_axis(7, 3, 2, 1, true, 4, 1, 1);
  expect_axis(8, 3, 2, 1, true, 4, 0, 1);
  expect_axis(5, 3, 1, 1, true, 5, 1, 1);
  expect_axis(5, 3, 1, 2, true, 5, 2, 2);
  expect_axis(4, 4, 1, 1, true, 4, 1, 2);
  expect_axis(6, 1, 2, 1, true, 3, 0, 0);
  expect_axis(5, 2, 3, 1, true, 2, 0, 0);  // (2-1)*3 + 2 - 5 < 0: no padding
}

TEST(ConvUtils, ValidOutputSizes) {
  expect_axis(7, 3, 2, 1, false, 3, 0, 0);
  expect_axis(8, 3, 2, 1, false, 3, 0, 0);
  expect_axis(28, 3, 1, 1, false, 26, 0, 0);
  expect_axis(7, 3, 1, 3, false, 1, 0, 0);
  expect_axis(6, 3, 1, 3, false, 0, 0, 0);  // dilated extent 7 > 6
  expect_axis(2, 3, 1, 1, false, 0, 0, 0);
}

TEST(ConvUtils, ParamsCarryTheAsymmetricPadding) {
  std::string padding = "SAME", format;
  ConvGeometry g = check_conv_arguments("", 3, 2, padding, format, 1);
  EXPECT_EQ(padding, "same");
  EXPECT_EQ(format, "channels_last");
  g.groups = 1;
  g.filters = 16;
  const backend::Conv2DParams p = conv2d_params({4, 9, 8, 3}, g);
  EXPECT_EQ(p.out_h, 5);
  EXPECT_EQ(p.out_w, 4);
  EXPECT_EQ(p.pad_top, 1);
  EXPECT_EQ(p.pad_bottom, 1);
  EXPECT_EQ(p.pad_left, 0);
  EXPECT_EQ(p.pad_right, 1);
  EXPECT_EQ(conv2d_output_shape("", {-1, 9, 8, 3}, g), (Shape{-1, 5, 4, 16}));
}

}  // namespace
}  // namespace tower::layers::detail
