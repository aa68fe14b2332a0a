#include "applications/mobilenet_v2.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "layers/layers.h"

namespace tower::applications {

namespace {

namespace fs = std::filesystem;

const std::string kBaseWeightUrl = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/";
constexpr std::array<double, 6> kImagenetAlphas = {0.35, 0.50, 0.75, 1.0, 1.3, 1.4};
constexpr std::array<Index, 5> kImagenetSizes = {96, 128, 160, 192, 224};

bool contains(const auto& values, auto v) { return std::find(values.begin(), values.end(), v) != values.end(); }

// Python's str(float): the shortest decimal that reads back, with ".0" on whole numbers.
std::string python_float(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// An input_shape as Python prints the tuple: "(224, 224, 3)".
std::string tuple_string(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + (s[i] < 0 ? std::string("None") : std::to_string(s[i]));
  return out + (s.rank() == 1 ? ",)" : ")");
}

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("MobileNetV2: " + what); }

// Keras' checks (MobileNetV2 and imagenet_utils.obtain_input_shape), in Keras' order.
void validate(const MobileNetV2Options& o, bool imagenet, bool pretrained) {
  if (pretrained && !imagenet && !fs::exists(o.weights))
    fail("The `weights` argument should be either `None` (random initialization), `imagenet` (pre-training on "
         "ImageNet), or the path to the weights file to be loaded.  Received `weights=" + o.weights +
         "` (no such file)");
  if (imagenet && o.include_top && o.classes != 1000)
    fail("If using `weights=\"imagenet\"` with `include_top` as true, `classes` should be 1000. Received "
         "`classes=" + std::to_string(o.classes) + "`");
  const Shape& s = o.input_shape;
  if (imagenet && o.include_top) {
    const Index size = s.rank() == 3 && s[0] == s[1] && contains(kImagenetSizes, s[0]) ? s[0] : 224;
    if (s != Shape{size, size, 3})
      fail("When setting `include_top=True` and loading `imagenet` weights, `input_shape` should be " +
           tuple_string(Shape{size, size, 3}) + ".  Received: input_shape=" + tuple_string(s));
  }
  if (s.rank() != 3) fail("`input_shape` must be a tuple of three integers. Received: input_shape=" + tuple_string(s));
  if (imagenet && s[2] != 3) fail("The input must have 3 channels; Received `input_shape=" + tuple_string(s) + "`");
  if (s[0] < 0 || s[1] < 0 || s[2] <= 0)
    fail("every dimension of `input_shape` must be known (Tower builds static graphs); Received: input_shape=" +
         tuple_string(s));
  if (s[0] < 32 || s[1] < 32) fail("Input size must be at least 32x32; Received: input_shape=" + tuple_string(s));
  if (imagenet && !contains(kImagenetAlphas, o.alpha))
    fail("If imagenet weights are being loaded, alpha must be one of `0.35`, `0.50`, `0.75`, `1.0`, `1.3` or "
         "`1.4` only; Received `alpha=" + python_float(o.alpha) + "`");
  if (!(o.alpha > 0)) fail("`alpha` must be positive; Received `alpha=" + python_float(o.alpha) + "`");
  if (o.include_top) {
    if (o.classes < 1) fail("`classes` must be at least 1 with `include_top`; Received `classes=" +
                            std::to_string(o.classes) + "`");
    const activations::Activation activation(o.classifier_activation);
    if (pretrained && !activation.is_linear() && activation.name() != "softmax")
      fail("Only `None` and `softmax` activations are allowed for the `classifier_activation` argument when "
           "using pretrained weights, with `include_top=True`; Received: classifier_activation=" +
           o.classifier_activation);
  } else if (o.pooling != "" && o.pooling != "avg" && o.pooling != "max") {
    fail("`pooling` must be \"\" (none), \"avg\" or \"max\"; Received `pooling=" + o.pooling + "`");
  }
}

// Keras' cache folder for downloaded models: $KERAS_HOME/models, else ~/.keras/models (/tmp/.keras/models when
// the home folder is not writable, as Keras falls back).
fs::path keras_models_dir() {
  if (const char* home = std::getenv("KERAS_HOME")) return fs::path(home) / "models";
  const char* user_home = std::getenv("HOME");
  if (user_home && ::access(user_home, W_OK) == 0) return fs::path(user_home) / ".keras" / "models";
  return fs::path("/tmp/.keras/models");
}

std::string imagenet_weights_path(double alpha, Index rows, bool include_top) {
  const std::string file = detail::imagenet_weights_file(alpha, rows, include_top);
  const fs::path dir = keras_models_dir();
  const fs::path path = dir / file;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error("MobileNetV2: the imagenet weights file " + path.string() +
                             " does not exist. Tower downloads nothing: fetch " + kBaseWeightUrl + file +
                             " (the file keras.applications.MobileNetV2 downloads) and put it in " + dir.string() +
                             " (set KERAS_HOME to use another folder), or pass the path of a weights file as "
                             "`weights`");
  return path.string();
}

// Keras' _inverted_res_block.
SymbolicTensor inverted_res_block(const SymbolicTensor& inputs, int expansion, int stride, double alpha,
                                  int filters, int block_id) {
  const Index in_channels = inputs.shape()[-1];
  const int pointwise_filters = detail::make_divisible(static_cast<int>(filters * alpha), 8);
  SymbolicTensor x = inputs;
  std::string prefix = "block_" + std::to_string(block_id) + "_";

  if (block_id) {
    x = layers::Conv2D({.filters = static_cast<int>(expansion * in_channels), .kernel_size = 1, .padding = "same",
                        .use_bias = false, .name = prefix + "expand"})(x);
    x = layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = prefix + "expand_BN"})(x);
    x = layers::ReLU({.max_value = 6.f, .name = prefix + "expand_relu"})(x);
  } else {
    prefix = "expanded_conv_";
  }

  if (stride == 2)
    x = layers::ZeroPadding2D({.padding = detail::correct_pad(x.shape()[1], x.shape()[2], 3), .name = prefix + "pad"})(x);
  x = layers::DepthwiseConv2D({.kernel_size = 3, .strides = stride, .padding = stride == 1 ? "same" : "valid",
                               .use_bias = false, .name = prefix + "depthwise"})(x);
  x = layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = prefix + "depthwise_BN"})(x);
  x = layers::ReLU({.max_value = 6.f, .name = prefix + "depthwise_relu"})(x);

  x = layers::Conv2D({.filters = pointwise_filters, .kernel_size = 1, .padding = "same", .use_bias = false,
                      .name = prefix + "project"})(x);
  x = layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = prefix + "project_BN"})(x);

  if (in_channels == pointwise_filters && stride == 1) return layers::Add({.name = prefix + "add"})({inputs, x});
  return x;
}

}  // namespace

namespace detail {

int make_divisible(double v, int divisor, int min_value) {
  if (min_value == 0) min_value = divisor;
  int new_v = std::max(min_value, static_cast<int>(v + divisor / 2.0) / divisor * divisor);
  if (new_v < 0.9 * v) new_v += divisor;
  return new_v;
}

Padding2D correct_pad(Index rows, Index cols, int kernel) {
  const int correct = kernel / 2;
  return Padding2D({correct - static_cast<int>(1 - rows % 2), correct},
                   {correct - static_cast<int>(1 - cols % 2), correct});
}

std::string imagenet_weights_file(double alpha, Index rows, bool include_top) {
  return "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_" + python_float(alpha) + "_" + std::to_string(rows) +
         (include_top ? ".h5" : "_no_top.h5");
}

}  // namespace detail

Model MobileNetV2(const MobileNetV2Options& options) {
  const bool imagenet = options.weights == "imagenet";
  const bool pretrained = !(options.weights.empty() || options.weights == "none");
  validate(options, imagenet, pretrained);
  const double alpha = options.alpha;

  Index rows = options.input_shape[0];
  if (imagenet && (rows != options.input_shape[1] || !contains(kImagenetSizes, rows))) {
    rows = 224;
    std::cerr << "Warning: MobileNetV2: `input_shape` is undefined or non-square, or `rows` is not in [96, 128, "
                 "160, 192, 224]. Weights for input shape (224, 224) will be loaded as the default.\n";
  }

  const SymbolicTensor img_input = Input(options.input_shape);

  SymbolicTensor x = layers::Conv2D({.filters = detail::make_divisible(32 * alpha, 8), .kernel_size = 3, .strides = 2,
                                     .padding = "same", .use_bias = false, .name = "Conv1"})(img_input);
  x = layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = "bn_Conv1"})(x);
  x = layers::ReLU({.max_value = 6.f, .name = "Conv1_relu"})(x);

  struct Block {
    int filters, stride, expansion;
  };
  static constexpr Block kBlocks[] = {
      {16, 1, 1},                                                // 0
      {24, 2, 6},  {24, 1, 6},                                   // 1-2
      {32, 2, 6},  {32, 1, 6},  {32, 1, 6},                      // 3-5
      {64, 2, 6},  {64, 1, 6},  {64, 1, 6},  {64, 1, 6},         // 6-9
      {96, 1, 6},  {96, 1, 6},  {96, 1, 6},                      // 10-12
      {160, 2, 6}, {160, 1, 6}, {160, 1, 6},                     // 13-15
      {320, 1, 6},                                               // 16
  };
  int block_id = 0;
  for (const Block& b : kBlocks) x = inverted_res_block(x, b.expansion, b.stride, alpha, b.filters, block_id++);

  // No alpha on the last convolution below 1, as in the paper; above 1 it widens.
  const int last_block_filters = alpha > 1.0 ? detail::make_divisible(1280 * alpha, 8) : 1280;
  x = layers::Conv2D({.filters = last_block_filters, .kernel_size = 1, .use_bias = false, .name = "Conv_1"})(x);
  x = layers::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = "Conv_1_bn"})(x);
  x = layers::ReLU({.max_value = 6.f, .name = "out_relu"})(x);

  if (options.include_top) {
    x = layers::GlobalAveragePooling2D()(x);
    x = layers::Dense({.units = options.classes, .activation = options.classifier_activation, .name = "predictions"})(x);
  } else if (options.pooling == "avg") {
    x = layers::GlobalAveragePooling2D()(x);
  } else if (options.pooling == "max") {
    x = layers::GlobalMaxPooling2D()(x);
  }

  std::string name = options.name;
  if (name.empty()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "mobilenetv2_%.2f_%lld", alpha, static_cast<long long>(rows));
    name = buf;
  }
  Model model(img_input, x, name);

  if (imagenet)
    model.load_weights(imagenet_weights_path(alpha, rows, options.include_top));
  else if (pretrained)
    model.load_weights(options.weights);
  return model;
}

Tensor preprocess_input(const Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("preprocess_input: the input tensor is undefined");
  if (x.dtype() != DType::float32 && x.dtype() != DType::uint8)
    throw std::invalid_argument("preprocess_input: expected a float32 or uint8 tensor, got " + dtype_name(x.dtype()) +
                                " of shape " + x.shape().to_string());
  const Tensor in = x.to(Device::cpu());
  Tensor out(x.shape());
  float* y = out.data<float>();
  const Index n = x.numel();
  if (in.dtype() == DType::uint8) {
    const std::uint8_t* p = in.data<std::uint8_t>();
    for (Index i = 0; i < n; ++i) y[i] = static_cast<float>(p[i]) / 127.5f - 1.f;
  } else {
    const float* p = in.data<float>();
    for (Index i = 0; i < n; ++i) y[i] = p[i] / 127.5f - 1.f;
  }
  return out.to(x.device());
}

}  // namespace tower::applications
