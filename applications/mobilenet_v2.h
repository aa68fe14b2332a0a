#pragma once
// MobileNetV2 (keras.applications.MobileNetV2), built layer for layer as Keras builds it: the same layers,
// names ("Conv1", "bn_Conv1", "block_1_expand", "block_1_pad", ..., "Conv_1_bn", "out_relu", "predictions"),
// shapes and weights in the same order, so a Keras weights file maps one to one.
//
//   auto base = applications::MobileNetV2({.input_shape = {96, 96, 3}, .include_top = false, .weights = ""});
//
// Inputs are NHWC images scaled to [-1, 1] (see preprocess_input). The input layer gets an automatic name
// ("input_layer", ...), as do the pooling layers ("global_average_pooling2d", ...), as in Keras.
//
// Arguments are checked as Keras checks them; each error throws std::invalid_argument with Keras' message:
//   - weights must be "imagenet", "" or "none" (random initialisation), or the path of an existing file;
//   - input_shape must be (rows, cols, channels) with rows and cols >= 32 (Tower needs them known);
//   - with "imagenet": 3 channels; alpha one of 0.35, 0.5, 0.75, 1.0, 1.3, 1.4; with include_top also
//     classes == 1000 and input_shape (s, s, 3) where s is the rows if square and one of 96, 128, 160, 192,
//     224, else 224. A non-square or other size without the top loads the 224 weights, with a warning on
//     standard error as Keras gives;
//   - with any pretrained weights (imagenet or a file) classifier_activation must be "softmax" or linear;
// and, beyond Keras (which would fail later or silently ignore them): alpha must be > 0, classes >= 1 with
// include_top, and pooling "", "avg" or "max" (pooling is ignored with include_top, as in Keras).
//
// Weights: "" / "none" keeps each layer's initialiser (Keras' defaults); a path is given to
// Model::load_weights; "imagenet" loads Keras' cached file
// <keras home>/models/mobilenet_v2_weights_tf_dim_ordering_tf_kernels_<alpha>_<rows>[_no_top].h5, where
// <keras home> is $KERAS_HOME, else ~/.keras (Keras' own cache; nothing is downloaded). A missing file throws
// std::runtime_error naming the file, the folder to put it in and the URL Keras downloads it from.
#include <string>

#include "api/core/shape.h"
#include "api/core/tensor.h"
#include "api/engine/layer_options.h"
#include "api/models/model.h"

namespace tower::applications {

// Designated initialisers follow this order, e.g. MobileNetV2({.input_shape = {32, 32, 1}, .classes = 10,
// .weights = ""}).
struct MobileNetV2Options {
  Shape input_shape = {224, 224, 3};  // (rows, cols, channels); any size >= 32x32 and any channel count
                                      // when no pretrained weights are loaded
  double alpha = 1.0;                 // width multiplier; imagenet weights exist for 0.35, 0.5, 0.75, 1.0, 1.3, 1.4
  bool include_top = true;
  int classes = 1000;
  std::string weights = "imagenet";   // "imagenet", "" / "none" (random init), or a weights file path
  std::string pooling;                // "", "avg", "max" (only when include_top is false)
  std::string classifier_activation = "softmax";
  std::string name;                   // default as Keras: "mobilenetv2_<alpha %.2f>_<rows>"
};

Model MobileNetV2(const MobileNetV2Options& options = {});

// MobileNetV2's preprocessing (Keras' mode "tf"): x / 127.5 - 1, pixels in [0, 255] to [-1, 1]. Returns a new
// float32 tensor on x's device; x may be float32 or uint8. Throws std::invalid_argument for another dtype or
// an undefined tensor.
Tensor preprocess_input(const Tensor& x);

namespace detail {

// Keras' _make_divisible: v rounded to the nearest multiple of divisor, at least min_value (default: divisor)
// and never more than 10% below v.
int make_divisible(double v, int divisor, int min_value = 0);

// Keras' imagenet_utils.correct_pad for a stride-2 convolution of `kernel` on rows x cols:
// {{top, bottom}, {left, right}} = {{k/2 - (1 - rows % 2), k/2}, {k/2 - (1 - cols % 2), k/2}}.
Padding2D correct_pad(Index rows, Index cols, int kernel);

// The file Keras caches imagenet weights in: "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224.h5"
// (alpha printed as Python prints a float), "..._no_top.h5" without the top.
std::string imagenet_weights_file(double alpha, Index rows, bool include_top);

}  // namespace detail

}  // namespace tower::applications
