#include "layers/add.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Add, SumsTwoAndThreeInputs) {
  layers::Add add;
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{10, 20, 30, 40}, {2, 2});
  const Tensor c = Tensor::from_vector(std::vector<float>{0.5f, -1, 0, 100}, {2, 2});
  testing::expect_near(testing::run_layer(add, {a, b})[0], {11, 22, 33, 44});
  layers::Add add3;
  testing::expect_near(testing::run_layer(add3, {a, b, c})[0], {11.5f, 21, 33, 144});
}

TEST(Add, Gradients) {
  layers::Add add;
  testing::check_gradients(add, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 4}, 2)});
  layers::Add add3;
  testing::check_gradients(add3, {testing::random_tensor({3, 5}, 3), testing::random_tensor({3, 5}, 4),
                                  testing::random_tensor({3, 5}, 5)});
}

TEST(Add, TheSameTensorTwice) {
  // y = x + x: the two gradients fan in to 2 dy.
  auto x = Input({4});
  Model model(x, layers::Add()(std::vector<SymbolicTensor>{x, x})[0]);
  testing::check_gradients(model, {testing::random_tensor({2, 4}, 6)});
}

TEST(Add, ConfigRoundTrip) {
  layers::Add add({.name = "sum"});
  testing::check_config_roundtrip(add);
  EXPECT_EQ(add->get_config(), Config::parse_json(R"({"name": "sum"})"));
}

TEST(Add, MismatchNamesLayerAndShapes) {
  layers::Add add({.name = "plus"});
  try {
    add(std::vector<SymbolicTensor>{Input({2}), Input({2}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'plus' (Add)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 2), (None, 2), (None, 3)]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
