#include "layers/dense.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

TEST(Dense, ForwardMatchesHandComputedValues) {
  layers::Dense dense({.units = 2, .kernel_initializer = "ones", .bias_initializer = initializers::Constant(0.5)});
  // x = [[1, 2, 3]], kernel all ones, bias 0.5: y = 6.5 in both units.
  auto out = testing::run_layer(dense, {Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})});
  testing::expect_near(out[0], {6.5f, 6.5f});
  dense->kernel()->value.copy_from(Tensor::from_vector(std::vector<float>{1, -1, 0, 2, 3, 0.5f}, {3, 2}));
  // y0 = 1*1 + 2*0 + 3*3 + .5 = 10.5; y1 = 1*-1 + 2*2 + 3*.5 + .5 = 5
  out = testing::run_layer(dense, {Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})});
  testing::expect_near(out[0], {10.5f, 5.f});
}

TEST(Dense, ActivationIsApplied) {
  layers::Dense dense({.units = 1, .activation = "relu", .kernel_initializer = initializers::Constant(-1.0)});
  auto out = testing::run_layer(dense, {Tensor::from_vector(std::vector<float>{1, 2, -5, 1}, {2, 2})});
  testing::expect_near(out[0], {0.f, 4.f});
}

TEST(Dense, AppliesToTheLastAxisOfRank3Input) {
  layers::Dense dense({.units = 4});
  auto y = dense(Input({5, 3}));
  EXPECT_EQ(y.shape(), (Shape{-1, 5, 4}));
  EXPECT_EQ(dense->count_params(), 3 * 4 + 4);
}

TEST(Dense, Gradients) {
  for (const char* act : {"linear", "relu", "sigmoid", "tanh", "gelu", "swish", "softmax", "elu"}) {
    SCOPED_TRACE(act);
    // Fixed weights and a step of 1e-3: with the default 1e-2 some pre-activation of this draw lies close enough
    // to relu's kink at 0 for the central difference to straddle it.
    layers::Dense dense({.units = 3, .activation = act, .kernel_initializer = initializers::GlorotUniform(3)});
    testing::GradCheckOptions o;
    o.eps = 1e-3;
    check_gradients(dense, {random_tensor({4, 5}, 1)}, o);
  }
}

TEST(Dense, GradientsWithoutBiasOnRank3Input) {
  layers::Dense dense({.units = 3, .use_bias = false});
  check_gradients(dense, {random_tensor({2, 3, 4}, 2)});
}

TEST(Dense, ConfigRoundTrip) {
  layers::Dense dense({.units = 7, .activation = "tanh", .use_bias = false, .kernel_regularizer = regularizers::L2(1e-4),
                       .name = "head"});
  dense(Input({3}));
  testing::check_config_roundtrip(dense);
  const Config c = dense->get_config();
  EXPECT_EQ(c.at("units").as_int(), 7);
  EXPECT_EQ(c.at("activation").as_string(), "tanh");
}

TEST(Dense, MismatchedInputNamesLayerAndShapes) {
  layers::Dense dense({.units = 4, .name = "fc"});
  dense(Input({10}));
  try {
    dense(Input({20}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'fc'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("10"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 20)"), std::string::npos) << msg;
  }
}

TEST(Dense, RejectsNonPositiveUnits) { EXPECT_THROW(layers::Dense({.units = 0}), std::invalid_argument); }

}  // namespace
}  // namespace tower
