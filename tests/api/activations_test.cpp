#include "api/activations/activations.h"

#include <cmath>

#include "layers/activation.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using activations::Activation;

// Values at kXs worked out in double precision from the textbook formulas (Keras 3 definitions: gelu exact,
// leaky_relu slope 0.2, elu alpha 1, hard_sigmoid = clip(x / 6 + 1/2, 0, 1), selu's published constants).
const std::vector<float> kXs = {-3.5f, -1.2f, -0.3f, 0.4f, 1.7f, 7.f};
const std::vector<std::pair<std::string, std::vector<float>>> kExpected = {
    {"linear", {-3.5f, -1.2f, -0.3f, 0.4f, 1.7f, 7.f}},
    {"relu", {0.f, 0.f, 0.f, 0.4f, 1.7f, 7.f}},
    {"relu6", {0.f, 0.f, 0.f, 0.4f, 1.7f, 6.f}},
    {"sigmoid", {0.0293122308f, 0.231475217f, 0.425557483f, 0.59868766f, 0.845534735f, 0.999088949f}},
    {"tanh", {-0.998177898f, -0.833654607f, -0.291312612f, 0.379948962f, 0.935409071f, 0.999998337f}},
    {"gelu", {-0.000814201777f, -0.138083604f, -0.114626573f, 0.262168697f, 1.62423871f, 7.f}},
    {"gelu_approximate", {-0.000616197655f, -0.138297231f, -0.114629076f, 0.262161169f, 1.6241059f, 7.f}},
    {"swish", {-0.102592808f, -0.27777026f, -0.127667245f, 0.239475064f, 1.43740905f, 6.99362264f}},
    {"silu", {-0.102592808f, -0.27777026f, -0.127667245f, 0.239475064f, 1.43740905f, 6.99362264f}},
    {"elu", {-0.969802617f, -0.698805788f, -0.259181779f, 0.4f, 1.7f, 7.f}},
    {"leaky_relu", {-0.7f, -0.24f, -0.06f, 0.4f, 1.7f, 7.f}},
    {"selu", {-1.70500934f, -1.22857f, -0.455667315f, 0.420280395f, 1.78619168f, 7.35490691f}},
    {"softplus", {0.0297504183f, 0.263282467f, 0.554355244f, 0.913015252f, 1.86778603f, 7.00091147f}},
    {"softsign", {-0.777777778f, -0.545454545f, -0.230769231f, 0.285714286f, 0.62962963f, 0.875f}},
    {"hard_sigmoid", {0.f, 0.3f, 0.45f, 0.566666667f, 0.783333333f, 1.f}},
    {"exponential", {0.0301973834f, 0.301194212f, 0.740818221f, 1.4918247f, 5.47394739f, 1096.63316f}},
    // Over the one row of six values.
    {"softmax", {2.73360843e-05f, 0.000272655092f, 0.000670623314f, 0.00135046951f, 0.00495527329f, 0.992723643f}},
};

Tensor apply(const Activation& act, const Tensor& x) {
  Tensor y(x.shape());
  act.forward(x, y);
  return y;
}

TEST(Activations, ValuesOfEveryName) {
  const Tensor x = Tensor::from_vector(kXs, {1, 6});
  for (const auto& [name, expected] : kExpected) {
    SCOPED_TRACE(name);
    const Activation act(name);
    EXPECT_EQ(act.name(), name);
    testing::expect_near(apply(act, x), expected, 1e-6f, 2e-6f, name);
  }
}

TEST(Activations, EmptyAndNoneMeanLinear) {
  for (const char* name : {"", "None", "none", "linear"}) {
    const Activation act(name);
    EXPECT_TRUE(act.is_linear()) << name;
    EXPECT_EQ(act.name(), "linear");
  }
  EXPECT_TRUE(Activation().is_linear());
}

TEST(Activations, UnknownNameListsTheKnownOnes) {
  try {
    Activation act("relu7");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'relu7'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hard_sigmoid"), std::string::npos) << msg;
  }
}

TEST(Activations, SoftmaxRunsOverTheLastAxisOfEachRow) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 0, 0, 0}, {2, 3});
  testing::expect_near(apply("softmax", x), {0.0900305732f, 0.244728471f, 0.665240956f, 1 / 3.f, 1 / 3.f, 1 / 3.f});
}

TEST(Activations, ExtremeInputsStayFinite) {
  const Tensor x = Tensor::from_vector(std::vector<float>{-100.f, 100.f}, {1, 2});
  testing::expect_near(apply("sigmoid", x), {0.f, 1.f});
  testing::expect_near(apply("softplus", x), {0.f, 100.f});
  testing::expect_near(apply("elu", x), {-1.f, 100.f});
  testing::expect_near(apply("selu", x), {-1.7580993408473766f, 105.07009873554805f});
  testing::expect_near(apply("swish", x), {0.f, 100.f});
  testing::expect_near(apply("softmax", Tensor::from_vector(std::vector<float>{1000.f, 1000.f}, {1, 2})), {0.5f, 0.5f});
}

// Inputs spaced 0.29 apart from -3.9: none within 0.03 of a kink (0 for the relus, 6 for relu6, +-3 for
// hard_sigmoid), so the finite differences never straddle one.
Tensor away_from_kinks(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = -3.9f + 0.29f * static_cast<float>((i * 7) % v.size());
  return Tensor::from_vector(v, shape);
}

TEST(Activations, GradientsThroughTheActivationLayer) {
  const Tensor x = away_from_kinks({3, 12});  // -3.9 .. 6.25
  for (const auto& entry : kExpected) {
    SCOPED_TRACE(entry.first);
    layers::Activation layer({.activation = entry.first});
    testing::check_gradients(layer, {x});
  }
}

// Dense applies an activation in place when output_suffices(), handing backward the output as its input:
// the gradient must then come out the same.
TEST(Activations, OutputSufficesMeansTheOutputGivesTheSameGradient) {
  const Tensor x = away_from_kinks({2, 12});
  const Tensor dy = testing::random_tensor({2, 12}, 5);
  int checked = 0;
  for (const auto& entry : kExpected) {
    const Activation act(entry.first);
    if (!act.output_suffices()) continue;
    SCOPED_TRACE(entry.first);
    ++checked;
    const Tensor y = apply(act, x);
    Tensor from_x(x.shape()), from_y(x.shape());
    act.backward(x, y, dy, from_x);
    act.backward(y, y, dy, from_y);
    testing::expect_near(from_y, from_x, 1e-6f, 1e-6f, entry.first);
  }
  EXPECT_GE(checked, 6);
}

TEST(Activations, BackwardMayWriteOverItsUpstreamGradient) {
  const Tensor x = away_from_kinks({1, 12});
  const Tensor dy = testing::random_tensor({1, 12}, 6);
  for (const char* name : {"tanh", "gelu", "softmax", "relu"}) {
    SCOPED_TRACE(name);
    const Activation act(name);
    const Tensor y = apply(act, x);
    Tensor separate(x.shape());
    act.backward(x, y, dy, separate);
    Tensor in_place = dy.clone();
    act.backward(x, y, in_place, in_place);
    testing::expect_near(in_place, separate, 0.f, 0.f, name);
  }
}

}  // namespace
}  // namespace tower
