#include "layers/time_distributed.h"

#include <string>

#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/layer_normalization.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(TimeDistributed, AppliesTheLayerToEveryStepWithTheSameWeights) {
  layers::Dense dense({.units = 3, .activation = "tanh"});
  layers::TimeDistributed td({.layer = dense});
  EXPECT_EQ(td(Input({4, 5})).shape(), (Shape{-1, 4, 3}));
  ASSERT_EQ(td->weights().size(), 2u);
  EXPECT_EQ(td->weights()[0], dense->weights()[0]);
  EXPECT_EQ(td->weights()[0]->name, "kernel");
  EXPECT_EQ(td->count_params(), 5 * 3 + 3);
  dense->bias()->value.copy_from(testing::random_tensor({3}, 2));
  const Tensor x = testing::random_tensor({2, 4, 5}, 1);
  const auto y = testing::run_layer(td, {x});
  EXPECT_EQ(y[0].shape(), (Shape{2, 4, 3}));
  testing::expect_near(y[0], testing::run_layer(dense, {x.reshape({8, 5})})[0].reshape({2, 4, 3}));
}

TEST(TimeDistributed, OutputShapesOfImageAndSequenceLayers) {
  // A Conv2D over each of 3 frames; a Flatten of each frame.
  EXPECT_EQ(
      layers::TimeDistributed({.layer = layers::Conv2D({.filters = 2, .kernel_size = 3})})(Input({3, 6, 6, 1})).shape(),
      (Shape{-1, 3, 4, 4, 2}));
  EXPECT_EQ(layers::TimeDistributed({.layer = layers::Flatten()})(Input({3, 2, 5})).shape(), (Shape{-1, 3, 10}));
}

TEST(TimeDistributed, Gradients) {
  testing::check_gradients(layers::TimeDistributed({.layer = layers::Dense({.units = 3, .activation = "sigmoid"})}),
                           {testing::random_tensor({2, 3, 4}, 1)});
  testing::check_gradients(
      layers::TimeDistributed({.layer = layers::Conv1D({.filters = 2, .kernel_size = 2, .padding = "causal"})}),
      {testing::random_tensor({2, 3, 5, 2}, 2)});
  // A layer written with ops (a CustomLayer) is differentiated through its recording on the merged batch.
  testing::check_gradients(layers::TimeDistributed({.layer = layers::LayerNormalization()}),
                           {testing::random_tensor({2, 3, 4}, 3)});
  testing::check_gradients(layers::TimeDistributed({.layer = layers::Flatten()}),
                           {testing::random_tensor({2, 3, 2, 2}, 4)});
}

TEST(TimeDistributed, FreezingReachesTheWrappedLayer) {
  layers::Dense dense({.units = 2});
  layers::TimeDistributed td({.layer = dense});
  td(Input({3, 4}));
  td->set_trainable(false);
  EXPECT_FALSE(dense->trainable());
  EXPECT_TRUE(td->trainable_weights().empty());
  EXPECT_EQ(td->non_trainable_weights().size(), 2u);
  testing::GradCheckOptions o;
  o.check_weights = false;
  testing::check_gradients(td, {testing::random_tensor({2, 3, 4}, 5)}, o);
}

TEST(TimeDistributed, TrainingBehaviourIsTheWrappedLayers) {
  layers::TimeDistributed td({.layer = layers::Dropout({.rate = 0.5f})});
  EXPECT_TRUE(td->has_training_behavior());
  const Tensor x = testing::random_tensor({2, 3, 4}, 6);
  testing::expect_near(testing::run_layer(td, {x}, /*training=*/false)[0], x);
}

TEST(TimeDistributed, ConfigHoldsTheSerializedLayer) {
  layers::TimeDistributed td({.layer = layers::Dense({.units = 3, .name = "inner"}), .name = "td"});
  td(Input({4, 5}));
  const Config c = td->get_config();
  EXPECT_EQ(c.at("layer").at("class_name").as_string(), "Dense");
  EXPECT_EQ(c.at("layer").at("config").at("units").as_int(), 3);
  EXPECT_EQ(c.at("layer").at("config").at("name").as_string(), "inner");
  testing::check_config_roundtrip(td);
  const LayerPtr back = layer_from_config(td->serialize());
  EXPECT_EQ(back->type(), "TimeDistributed");
  EXPECT_EQ(std::dynamic_pointer_cast<layers::TimeDistributedImpl>(back)->layer()->type(), "Dense");
}

TEST(TimeDistributed, BadArgumentsAndShapesNameTheLayer) {
  EXPECT_THROW(layers::TimeDistributed(), std::invalid_argument);  // no layer
  SymbolicTensor in = Input({3});
  Model model(in, layers::Dense({.units = 2})(in));
  EXPECT_THROW(layers::TimeDistributed({.layer = model}), std::invalid_argument);
  try {
    layers::TimeDistributed({.layer = layers::Dense({.units = 2}), .name = "td"})(Input({5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'td' (TimeDistributed): expects an input of rank 3 or more"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 5)"), std::string::npos) << msg;
  }
  // The wrapped layer's own error, for the shape of one step.
  EXPECT_THROW(layers::TimeDistributed({.layer = layers::Conv1D({.filters = 2, .kernel_size = 3})})(Input({4, 5})),
               ShapeError);
}

// A sequence model with Conv1D and TimeDistributed(Dense) trains, saves and loads.
TEST(TimeDistributed, AModelWithConv1DAndTimeDistributedTrainsSavesAndLoads) {
  set_random_seed(3);
  auto in = Input({6, 2});
  auto h = layers::Conv1D({.filters = 4, .kernel_size = 3, .padding = "causal", .activation = "relu"})(in);
  Model model({in}, {layers::TimeDistributed({.layer = layers::Dense({.units = 1}), .name = "td"})(h)});
  model.compile(optimizers::Adam(0.02), losses::MeanSquaredError());
  const Tensor x = testing::random_tensor({16, 6, 2}, 1);
  const Tensor y = testing::random_tensor({16, 6, 1}, 2, 0.f, 0.5f);
  const callbacks::History hist = model.fit(x, y, {.epochs = 10, .batch_size = 8, .verbose = 0});
  EXPECT_LT(hist["loss"].back(), hist["loss"].front());
  const std::string path = ::testing::TempDir() + "conv1d_time_distributed.tower";
  model.save(path);
  Model loaded = Model::load(path);
  EXPECT_EQ(loaded.predict(x).to_vector(), model.predict(x).to_vector());
  EXPECT_EQ(loaded->get_layer("td")->get_config().at("layer").at("class_name").as_string(), "Dense");
}

}  // namespace
}  // namespace tower
