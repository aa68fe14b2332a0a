#include "layers/flatten.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Flatten, KeepsRowMajorOrder) {
  layers::Flatten flatten;
  auto y = flatten(Input({3, 2, 2}));
  EXPECT_EQ(y.shape(), (Shape{-1, 12}));
  const Tensor x = testing::random_tensor({2, 3, 2, 2}, 1);
  const Tensor out = testing::run_layer(flatten, {x})[0];
  EXPECT_EQ(out.shape(), (Shape{2, 12}));
  testing::expect_near(out, x.to_vector(), 0.f, 0.f);
}

TEST(Flatten, BatchOnlyInputGetsOneFeature) {
  layers::Flatten flatten;
  EXPECT_EQ(flatten(Input(Shape{})).shape(), (Shape{-1, 1}));
}

TEST(Flatten, ChannelsFirstMovesChannelsLastFirst) {
  layers::Flatten flatten({.data_format = "channels_first"});
  // x[n, c, h, w] with C = 2, H = 2, W = 3: the output is x in (n, h, w, c) order, as Keras produces.
  const Tensor x = testing::random_tensor({2, 2, 2, 3}, 2);
  const std::vector<float> v = x.to_vector();
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w)
        for (int c = 0; c < 2; ++c) expected.push_back(v[static_cast<std::size_t>(((n * 2 + c) * 2 + h) * 3 + w)]);
  testing::expect_near(testing::run_layer(flatten, {x})[0], expected, 0.f, 0.f);
  // Rank 2 has no spatial axes to move.
  layers::Flatten flat2({.data_format = "channels_first"});
  const Tensor x2 = testing::random_tensor({2, 5}, 3);
  testing::expect_near(testing::run_layer(flat2, {x2})[0], x2, 0.f, 0.f);
}

TEST(Flatten, Gradients) {
  layers::Flatten flatten;
  testing::check_gradients(flatten, {testing::random_tensor({2, 3, 2, 2}, 4)});
  layers::Flatten channels_first({.data_format = "channels_first"});
  testing::check_gradients(channels_first, {testing::random_tensor({2, 3, 2, 4}, 5)});
  layers::Flatten rank5({.data_format = "channels_first"});
  testing::check_gradients(rank5, {testing::random_tensor({1, 2, 3, 2, 2}, 6)});
}

TEST(Flatten, ConfigRoundTrip) {
  layers::Flatten flatten({.name = "flat"});
  testing::check_config_roundtrip(flatten);
  EXPECT_EQ(flatten->get_config().at("data_format").as_string(), "channels_last");
}

TEST(Flatten, RejectsUnknownDataFormat) {
  EXPECT_THROW(layers::Flatten({.data_format = "nhwc"}), std::invalid_argument);
}

TEST(Flatten, TwoInputsNameTheLayer) {
  layers::Flatten flatten({.name = "f"});
  try {
    flatten(std::vector<SymbolicTensor>{Input({3}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'f' (Flatten)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
