// LocalResponseNormalization against tf.nn.local_response_normalization's formula: a tensor small enough to work
// by hand, and TensorFlow's definition written out again here in double precision (TensorFlow is not installed on
// the build machines, so the formula is the reference); the gradient by central differences; the config, the
// model files and the errors; on a GPU, the same layer on cuda:0 against the CPU.
#include "layers/local_response_normalization.h"

#include <unistd.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using LRN = layers::LocalResponseNormalization;
using LrnOptions = layers::LocalResponseNormalizationOptions;

// tf.nn.local_response_normalization over the last axis of x (`depth` channels), in double:
//   sqr_sum[d] = sum(x[d - r .. d + r]^2) over the channels that exist; y = x / (bias + alpha * sqr_sum)^beta.
std::vector<float> reference_lrn(const std::vector<float>& x, Index depth, const LrnOptions& o) {
  std::vector<float> y(x.size());
  for (std::size_t row = 0; row < x.size(); row += static_cast<std::size_t>(depth))
    for (Index d = 0; d < depth; ++d) {
      double sqr_sum = 0;
      for (Index k = d - o.depth_radius; k <= d + o.depth_radius; ++k)
        if (k >= 0 && k < depth) sqr_sum += double(x[row + std::size_t(k)]) * x[row + std::size_t(k)];
      const double norm = double(o.bias) + double(o.alpha) * sqr_sum;
      y[row + std::size_t(d)] = static_cast<float>(x[row + std::size_t(d)] / std::pow(norm, double(o.beta)));
    }
  return y;
}

void expect_matches_reference(const LrnOptions& o, const Shape& shape, std::uint64_t seed, float low = -3.f,
                              float high = 3.f) {
  const Tensor x = testing::random_tensor(shape, seed, low, high);
  const std::string what = "depth_radius " + std::to_string(o.depth_radius) + ", bias " + std::to_string(o.bias) +
                           ", alpha " + std::to_string(o.alpha) + ", beta " + std::to_string(o.beta) + ", input " +
                           shape.to_string();
  testing::expect_near(testing::run_layer(LRN(o), {x})[0], reference_lrn(x.to_vector(), shape[shape.rank() - 1], o),
                       1e-6f, 2e-6f, what);
}

// The arguments of tf.nn.lrn in TensorFlow's CIFAR-10 model (norm1, norm2) and in AlexNet.
const LrnOptions kCifar10{.depth_radius = 4, .bias = 1.f, .alpha = 0.001f / 9.f, .beta = 0.75f};
const LrnOptions kAlexNet{.depth_radius = 2, .bias = 2.f, .alpha = 1e-4f, .beta = 0.75f};

TEST(LocalResponseNormalization, HandComputed) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4});
  // depth_radius 1: the squares summed are 1+4, 1+4+9, 4+9+16, 9+16; with bias 1, alpha 1, beta 1 the
  // denominators are 6, 15, 30, 26.
  testing::expect_near(testing::run_layer(LRN({.depth_radius = 1, .beta = 1.f}), {x})[0],
                       {1 / 6.f, 2 / 15.f, 3 / 30.f, 4 / 26.f}, 1e-7f, 1e-6f, "radius 1, beta 1");
  // TensorFlow's defaults (radius 5 covers the four channels): x / sqrt(1 + 30).
  const float s = std::sqrt(31.f);
  testing::expect_near(testing::run_layer(LRN(), {x})[0], {1 / s, 2 / s, 3 / s, 4 / s}, 1e-7f, 1e-6f, "defaults");
  // bias 2, alpha 0.5, beta 2, radius 0: each channel alone, x / (2 + x^2 / 2)^2.
  testing::expect_near(testing::run_layer(LRN({.depth_radius = 0, .bias = 2.f, .alpha = 0.5f, .beta = 2.f}), {x})[0],
                       {1 / 6.25f, 2 / 16.f, 3 / 42.25f, 4 / 100.f}, 1e-7f, 1e-6f, "radius 0");
}

TEST(LocalResponseNormalization, TensorFlowsFormulaOnImages) {
  for (const LrnOptions& o : {LrnOptions{}, kCifar10, kAlexNet, LrnOptions{.depth_radius = 1, .alpha = 2.f},
                              LrnOptions{.depth_radius = 3, .bias = 0.5f, .alpha = 0.3f, .beta = 1.25f}})
    expect_matches_reference(o, {2, 5, 3, 13}, 1);
  // The CIFAR-10 model's own sizes: 64 channels after pool1.
  expect_matches_reference(kCifar10, {2, 12, 12, 64}, 2);
}

TEST(LocalResponseNormalization, EdgeChannelsSumOnlyTheChannelsThatExist) {
  const Tensor x = testing::random_tensor({3, 6}, 3, -2.f, 2.f);
  const std::vector<float> v = x.to_vector(), y = testing::run_layer(LRN({.depth_radius = 2, .beta = 1.f}), {x})[0]
                                                       .to_vector();
  const auto sq = [&](int row, int c) { return double(v[std::size_t(row * 6 + c)]) * v[std::size_t(row * 6 + c)]; };
  for (int row = 0; row < 3; ++row) {
    const auto at = [&](int c) { return y[std::size_t(row * 6 + c)]; };
    const auto x_at = [&](int c) { return v[std::size_t(row * 6 + c)]; };
    EXPECT_NEAR(at(0), x_at(0) / (1 + sq(row, 0) + sq(row, 1) + sq(row, 2)), 1e-6) << "row " << row;
    EXPECT_NEAR(at(1), x_at(1) / (1 + sq(row, 0) + sq(row, 1) + sq(row, 2) + sq(row, 3)), 1e-6) << "row " << row;
    EXPECT_NEAR(at(4), x_at(4) / (1 + sq(row, 2) + sq(row, 3) + sq(row, 4) + sq(row, 5)), 1e-6) << "row " << row;
    EXPECT_NEAR(at(5), x_at(5) / (1 + sq(row, 3) + sq(row, 4) + sq(row, 5)), 1e-6) << "row " << row;
  }
}

TEST(LocalResponseNormalization, ARadiusBeyondTheChannelsSumsThemAll) {
  const Tensor x = testing::random_tensor({4, 2, 3}, 4, -2.f, 2.f);
  const std::vector<float> v = x.to_vector();
  std::vector<float> expected(v.size());
  for (std::size_t row = 0; row < v.size(); row += 3) {
    const double all = double(v[row]) * v[row] + double(v[row + 1]) * v[row + 1] + double(v[row + 2]) * v[row + 2];
    for (std::size_t c = 0; c < 3; ++c)
      expected[row + c] = static_cast<float>(v[row + c] / std::pow(1 + 0.5 * all, 0.75));
  }
  for (const int radius : {2, 3, 10, INT_MAX}) {
    testing::expect_near(testing::run_layer(LRN({.depth_radius = radius, .alpha = 0.5f, .beta = 0.75f}), {x})[0],
                         expected, 1e-6f, 2e-6f, "depth_radius " + std::to_string(radius));
  }
  expect_matches_reference({.depth_radius = 7, .alpha = 0.5f, .beta = 0.75f}, {5, 3}, 5);
}

TEST(LocalResponseNormalization, AnyRankFromTwoWithTheChannelsLast) {
  expect_matches_reference(kCifar10, {7, 9}, 6, -20.f, 20.f);
  expect_matches_reference({.depth_radius = 2}, {3, 4, 5}, 7);
  expect_matches_reference({.depth_radius = 1}, {2, 2, 3, 2, 4}, 8);
  expect_matches_reference({}, {3, 1}, 9);
}

TEST(LocalResponseNormalization, GradientsByCentralDifferences) {
  struct Case {
    LrnOptions options;
    Shape shape;
  };
  for (const Case& c : {Case{{}, {2, 3, 2, 11}}, Case{kCifar10, {2, 2, 3, 16}}, Case{kAlexNet, {3, 9}},
                        Case{{.depth_radius = 1, .alpha = 1.5f, .beta = 0.75f}, {2, 2, 2, 7}},
                        Case{{.depth_radius = 0, .bias = 0.5f, .alpha = 2.f, .beta = 1.f}, {4, 5}},
                        Case{{.depth_radius = 9, .bias = 2.f, .alpha = 0.7f, .beta = 1.5f}, {3, 2, 4}}}) {
    SCOPED_TRACE("depth_radius " + std::to_string(c.options.depth_radius) + ", input " + c.shape.to_string());
    // Large alpha makes the normalization strongly non-linear; values of order one keep the differences exact
    // enough (GradCheckOptions).
    testing::check_gradients(LRN(c.options), {testing::random_tensor(c.shape, 10, -1.5f, 1.5f)});
  }
}

TEST(LocalResponseNormalization, ConfigRoundTripAndDefaults) {
  LRN lrn({.depth_radius = 4, .bias = 1.f, .alpha = 0.001f / 9.f, .beta = 0.75f, .name = "norm1"});
  testing::check_config_roundtrip(lrn);
  const Config c = lrn->get_config();
  EXPECT_EQ(c.at("depth_radius").as_int(), 4);
  EXPECT_FLOAT_EQ(static_cast<float>(c.at("alpha").as_double()), 0.001f / 9.f);
  EXPECT_FLOAT_EQ(static_cast<float>(c.at("beta").as_double()), 0.75f);
  EXPECT_EQ(c.at("name").as_string(), "norm1");
  EXPECT_EQ(lrn->count_params(), 0);

  const LayerPtr fresh = layer_from_config(Config::parse_json(R"({"class_name": "LocalResponseNormalization",
                                                                   "config": {}})"));
  const auto* impl = dynamic_cast<const layers::LocalResponseNormalizationImpl*>(fresh.get());
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->options().depth_radius, 5);
  EXPECT_EQ(impl->options().bias, 1.f);
  EXPECT_EQ(impl->options().alpha, 1.f);
  EXPECT_EQ(impl->options().beta, 0.5f);
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("tower_lrn_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// conv1, pool1, norm1 of TensorFlow's CIFAR-10 model, shrunk, then a classifier.
Model functional_model() {
  SymbolicTensor in = Input({8, 8, 3});
  SymbolicTensor h = layers::Conv2D(
      {.filters = 6, .kernel_size = 3, .padding = "same", .activation = "relu", .name = "conv1"})(in);
  h = layers::MaxPooling2D({.pool_size = 3, .strides = 2, .padding = "same", .name = "pool1"})(h);
  h = LRN({.depth_radius = 4, .bias = 1.f, .alpha = 0.001f / 9.f, .beta = 0.75f, .name = "norm1"})(h);
  h = layers::Dense({.units = 3, .name = "logits"})(layers::Flatten({.name = "flatten"})(h));
  return Model(in, h, "lrn_functional");
}

Sequential sequential_model() {
  return Sequential({InputLayer({.shape = {6, 5}}), layers::Dense({.units = 7}),
                     LRN({.depth_radius = 2, .name = "norm"}), layers::Dense({.units = 2})});
}

TEST(LocalResponseNormalization, ModelsWithItSaveAndLoad) {
  const Tensor x = testing::random_tensor({4, 8, 8, 3}, 11), xs = testing::random_tensor({4, 6, 5}, 12);
  set_random_seed(3);
  Model functional = functional_model();
  Sequential sequential = sequential_model();
  EXPECT_NE(functional.summary_string().find("norm1 (LocalResponseNormalization)"), std::string::npos)
      << functional.summary_string();
  EXPECT_NE(sequential.summary_string().find("(None, 6, 7)"), std::string::npos) << sequential.summary_string();

  const fs::path dir = temp_dir();
  functional.save(dir / "functional.tower");
  sequential.save(dir / "sequential.tower");
  Model functional_back = Model::load(dir / "functional.tower");
  Model sequential_back = Model::load(dir / "sequential.tower");
  testing::expect_near(functional_back.predict(x), functional.predict(x), 0.f, 0.f, "functional, loaded");
  testing::expect_near(sequential_back.predict(xs), sequential.predict(xs), 0.f, 0.f, "Sequential, loaded");
  const LayerPtr norm1 = functional_back.get_layer("norm1");
  const auto* norm = dynamic_cast<const layers::LocalResponseNormalizationImpl*>(norm1.get());
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->options().depth_radius, 4);
  EXPECT_FLOAT_EQ(norm->options().alpha, 0.001f / 9.f);

  // Keras' weights file: the layer has no weights, so the file holds the other layers' and loads into a new model.
  functional.save_weights(dir / "functional.weights.h5");
  set_random_seed(4);
  Model other = functional_model();
  other.load_weights(dir / "functional.weights.h5");
  testing::expect_near(other.predict(x), functional.predict(x), 0.f, 0.f, "functional, Keras weights");
  fs::remove_all(dir);
}

void expect_mentions(const std::string& message, const std::vector<std::string>& words) {
  EXPECT_FALSE(message.empty()) << "expected an exception";
  for (const std::string& w : words) EXPECT_NE(message.find(w), std::string::npos) << message;
}

TEST(LocalResponseNormalization, BadArgumentsNameTheLayerAndTheValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expect_mentions(testing::error_of([] { LRN({.depth_radius = -1, .name = "norm1"}); }),
                  {"'norm1'", "LocalResponseNormalization", "depth_radius", "-1"});
  expect_mentions(testing::error_of([&] { LRN({.bias = nan, .name = "n"}); }), {"'n'", "bias", "nan"});
  expect_mentions(testing::error_of([&] { LRN({.alpha = inf, .name = "n"}); }), {"'n'", "alpha", "inf"});
  expect_mentions(testing::error_of([&] { LRN({.beta = -inf, .name = "n"}); }), {"'n'", "beta", "-inf"});
  expect_mentions(testing::error_of([] {
                    layer_from_config(Config::parse_json(
                        R"({"class_name": "LocalResponseNormalization", "config": {"depth_radius": -3}})"));
                  }),
                  {"LocalResponseNormalization", "depth_radius", "-3"});
  // Input({}) is a batch of scalars: no channel axis.
  expect_mentions(testing::error_of([] { LRN({.name = "scalars"})(Input(Shape{})); }), {"'scalars'", "rank >= 2", "(None,)"});
}

// Forward and the input gradient of one LRN through a plan on `device`, for input x and output gradient dy.
std::pair<std::vector<float>, std::vector<float>> forward_backward(const LrnOptions& o, const Tensor& x,
                                                                    const Tensor& dy, Device device) {
  LRN lrn(o);
  SymbolicTensor in = Input(x.shape().without_batch());
  Model model(in, lrn(in));
  PlanOptions po;
  po.batch_size = x.dim(0);
  po.backward = true;
  po.input_gradients = true;
  po.device = device;
  Plan plan(model.impl(), po);
  const Tensor x_on_device = x.to(device);
  plan.set_input(0, x_on_device);
  plan.forward();
  plan.output_grad(0).copy_from(dy.to(device));
  plan.backward();
  return {plan.output(0).to_vector(), plan.input_grad(0).to_vector()};
}

TEST(LocalResponseNormalization, GpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  struct Case {
    LrnOptions options;
    Shape shape;
  };
  for (const Case& c : {Case{kCifar10, {33, 12, 12, 64}}, Case{{}, {5, 7, 3, 13}}, Case{kAlexNet, {3, 11, 96}},
                        Case{{.depth_radius = 40, .bias = 0.5f, .alpha = 0.3f, .beta = 1.25f}, {17, 5}}}) {
    const std::string what =
        "depth_radius " + std::to_string(c.options.depth_radius) + ", input " + c.shape.to_string();
    const Tensor x = testing::random_tensor(c.shape, 20, -3.f, 3.f), dy = testing::random_tensor(c.shape, 21);
    const auto [y_cpu, dx_cpu] = forward_backward(c.options, x, dy, Device::cpu());
    const auto [y_gpu, dx_gpu] = forward_backward(c.options, x, dy, Device::cuda(0));
    testing::expect_near(Tensor::from_vector(y_gpu, c.shape), y_cpu, 1e-6f, 1e-5f,
                         what + ", forward on cuda:0 against the CPU");
    testing::expect_near(Tensor::from_vector(dx_gpu, c.shape), dx_cpu, 1e-6f, 1e-5f,
                         what + ", backward on cuda:0 against the CPU");
  }
}

}  // namespace
}  // namespace tower
