#include "layers/rescaling.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Rescaling, ScaleAndOffset) {
  layers::Rescaling rescale({.scale = 1 / 127.5f, .offset = -1});
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 127.5f, 255, 51}, {1, 2, 2, 1});
  testing::expect_near(testing::run_layer(rescale, {x})[0], {-1, 0, 1, -0.6f});
  layers::Rescaling scale_only({.scale = 0.5f});
  testing::expect_near(testing::run_layer(scale_only, {x})[0], {0, 63.75f, 127.5f, 25.5f});
}

TEST(Rescaling, Gradients) {
  layers::Rescaling rescale({.scale = -2.5f, .offset = 3});
  testing::check_gradients(rescale, {testing::random_tensor({2, 3, 4}, 1)});
}

TEST(Rescaling, ConfigRoundTrip) {
  layers::Rescaling rescale({.scale = 0.25f, .offset = -1, .name = "norm"});
  testing::check_config_roundtrip(rescale);
  const Config c = rescale->get_config();
  EXPECT_DOUBLE_EQ(c.at("scale").as_double(), 0.25);
  EXPECT_DOUBLE_EQ(c.at("offset").as_double(), -1.0);
}

TEST(Rescaling, TwoInputsNameTheLayer) {
  layers::Rescaling rescale({.scale = 2, .name = "rs"});
  try {
    rescale(std::vector<SymbolicTensor>{Input({3}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'rs' (Rescaling)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
