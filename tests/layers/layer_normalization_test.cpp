#include "layers/layer_normalization.h"

#include <cmath>
#include <string>

#include "layers/dense.h"
#include "layers/flatten.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

// One row [1, 2, 3, 6]: mean 3, biased variance 3.5.
TEST(LayerNormalization, NormalizesEachExampleOverTheLastAxis) {
  layers::LayerNormalization ln({.epsilon = 0.5f});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 6, -1, -1, 1, 1}, {2, 4});
  const float s = 1 / std::sqrt(3.5f + 0.5f), t = 1 / std::sqrt(1.f + 0.5f);
  testing::expect_near(testing::run_layer(ln, {x})[0], {-2 * s, -s, 0, 3 * s, -t, -t, t, t});
}

TEST(LayerNormalization, WeightsFollowKerasNamesOrderAndShapes) {
  layers::LayerNormalization last;
  last(Input({3, 5}));
  ASSERT_EQ(last->weights().size(), 2u);
  EXPECT_EQ(last->weights()[0]->name, "gamma");
  EXPECT_EQ(last->weights()[1]->name, "beta");
  EXPECT_EQ(last->gamma()->value.shape(), Shape({5}));
  EXPECT_EQ(last->gamma()->value.to_vector(), std::vector<float>(5, 1.f));
  EXPECT_EQ(last->beta()->value.to_vector(), std::vector<float>(5, 0.f));
  layers::LayerNormalization hw({.axis = {2, 1}});
  hw(Input({3, 4, 2}));
  EXPECT_EQ(hw->gamma()->value.shape(), Shape({3, 4}));
  layers::LayerNormalization rms({.rms_scaling = true});
  rms(Input({4}));
  ASSERT_EQ(rms->weights().size(), 1u);
  EXPECT_EQ(rms->weights()[0]->name, "gamma");
  layers::LayerNormalization none({.center = false, .scale = false});
  none(Input({4}));
  EXPECT_TRUE(none->weights().empty());
}

TEST(LayerNormalization, Gradients) {
  layers::LayerNormalization ln({.axis = {1, 2}});
  ln(Input({3, 4, 2}));
  ln->gamma()->value.copy_from(testing::random_tensor({3, 4}, 7, 0.5f, 1.5f));
  ln->beta()->value.copy_from(testing::random_tensor({3, 4}, 8));
  testing::check_gradients(ln, {testing::random_tensor({2, 3, 4, 2}, 1)});
  layers::LayerNormalization rms({.rms_scaling = true});
  testing::check_gradients(rms, {testing::random_tensor({3, 5}, 2)});
}

TEST(LayerNormalization, BadAxesNameTheLayer) {
  layers::LayerNormalization out_of_range({.axis = {3}, .name = "ln"});
  try {
    out_of_range(Input({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Layer 'ln' (LayerNormalization): axis 3 is out of range"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(layers::LayerNormalization({.axis = {0}})(Input({4})), ShapeError);
  EXPECT_THROW(layers::LayerNormalization({.axis = {}}), std::invalid_argument);
  EXPECT_FALSE(layers::LayerNormalization()->built());
}

TEST(LayerNormalization, ConfigHasKerasKeysAndDefaults) {
  layers::LayerNormalization ln({.name = "ln"});
  testing::check_config_roundtrip(ln);
  const Config c = ln->get_config();
  EXPECT_EQ(c.at("axis").as_list().at(0).as_int(), -1);
  EXPECT_FLOAT_EQ(static_cast<float>(c.at("epsilon").as_double()), 1e-3f);
  EXPECT_TRUE(c.at("center").as_bool());
  EXPECT_TRUE(c.at("scale").as_bool());
  EXPECT_FALSE(c.at("rms_scaling").as_bool());
  EXPECT_EQ(c.at("gamma_initializer").at("class_name").as_string(), "Ones");
  EXPECT_EQ(c.at("beta_initializer").at("class_name").as_string(), "Zeros");
  // Keras writes axis as an int or a list.
  Config keras = Config::map();
  keras.set("axis", 2);
  keras.set("epsilon", 0.01);
  Config s = Config::map();
  s.set("class_name", "LayerNormalization");
  s.set("config", keras);
  const LayerPtr l = layer_from_config(s);
  EXPECT_EQ(l->get_config().at("axis").as_list().at(0).as_int(), 2);
}

TEST(LayerNormalization, TrainsSavesAndLoadsInAModel) {
  set_random_seed(11);
  auto in = Input({4, 3});
  auto h = layers::LayerNormalization({.name = "ln"})(in);
  Model model({in}, {layers::Dense({.units = 2, .activation = "softmax"})(layers::Flatten()(h))});
  model.compile(optimizers::Adam(0.02), losses::SparseCategoricalCrossentropy());
  const Tensor x = testing::random_tensor({32, 4, 3}, 3);
  std::vector<float> labels;
  const std::vector<float> xv = x.to_vector();
  for (Index i = 0; i < 32; ++i) labels.push_back(xv[static_cast<std::size_t>(i * 12)] > xv[static_cast<std::size_t>(i * 12 + 1)] ? 1.f : 0.f);
  const Tensor y = Tensor::from_vector(labels, {32});
  const std::vector<float> gamma0 = model->get_layer("ln")->weights()[0]->value.to_vector();
  const callbacks::History hist = model.fit(x, y, {.epochs = 15, .batch_size = 8, .verbose = 0});
  EXPECT_LT(hist["loss"].back(), 0.8 * hist["loss"].front());
  EXPECT_NE(model->get_layer("ln")->weights()[0]->value.to_vector(), gamma0) << "gamma did not train";
  const std::string path = ::testing::TempDir() + "layer_norm.tower";
  model.save(path);
  Model loaded = Model::load(path);
  EXPECT_EQ(loaded.predict(x).to_vector(), model.predict(x).to_vector());
}

}  // namespace
}  // namespace tower
