#include "layers/merge.h"

#include <cmath>

#include "api/tower/tower.h"
#include "layers/add.h"
#include "layers/average.h"
#include "layers/concatenate.h"
#include "layers/maximum.h"
#include "layers/minimum.h"
#include "layers/multiply.h"
#include "layers/subtract.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

// What every merge layer shares through Merge: any number of inputs from two on, all of one shape.

std::string shape_error_of(const LayerPtr& layer, const std::vector<SymbolicTensor>& inputs) {
  try {
    (*layer)(inputs);
  } catch (const ShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << layer->where() << "expected ShapeError";
  return "";
}

std::vector<LayerPtr> every_merge_layer() {
  return {layers::Add({.name = "m_add"}), layers::Subtract({.name = "m_sub"}), layers::Multiply({.name = "m_mul"}),
          layers::Average({.name = "m_avg"}), layers::Maximum({.name = "m_max"}), layers::Minimum({.name = "m_min"}),
          layers::Concatenate({.name = "m_cat"})};
}

TEST(Merge, TakeAnyNumberOfInputs) {
  for (const LayerPtr& layer : every_merge_layer()) EXPECT_EQ(layer->num_inputs(), -1) << layer->name();
}

TEST(Merge, OneInputIsRejectedNamingTheLayerAndShape) {
  for (const LayerPtr& layer : every_merge_layer()) {
    const std::string msg = shape_error_of(layer, {Input({3})});
    EXPECT_NE(msg.find("'" + layer->name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 3)]"), std::string::npos) << msg;
  }
}

TEST(Merge, DifferentShapesAreRejectedNamingEveryShape) {
  for (const LayerPtr& layer : every_merge_layer()) {
    if (layer->type() == "Concatenate") continue;  // relaxed along its axis; see concatenate_test.cpp
    const std::string msg = shape_error_of(layer, {Input({3, 4}), Input({3, 5})});
    EXPECT_NE(msg.find("'" + layer->name() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 3, 4), (None, 3, 5)]"), std::string::npos) << msg;
  }
}

// Keras' Merge broadcasting: the non-batch axes aligned at their ends, size 1 stretching, a lower rank expanded
// after the batch axis (values: tests/reference/layers/*_broadcast*.json).
TEST(Merge, BroadcastsAsKeras) {
  layers::Add add;
  EXPECT_EQ(add(std::vector<SymbolicTensor>{Input({3, 4}), Input({1, 4})})[0].shape(), (Shape{-1, 3, 4}));
  layers::Multiply mul;
  EXPECT_EQ(mul(std::vector<SymbolicTensor>{Input({4}), Input({3, 4})})[0].shape(), (Shape{-1, 3, 4}));
  layers::Maximum max;
  EXPECT_EQ(max(std::vector<SymbolicTensor>{Input({3, 1}), Input({1, 5}), Input({5})})[0].shape(),
            (Shape{-1, 3, 5}));
  layers::Subtract sub;
  EXPECT_THROW(sub(std::vector<SymbolicTensor>{Input({3, 4}), Input({2, 4})}), ShapeError);
}

TEST(Merge, ABadCallLeavesTheLayerUsable) {
  layers::Add add;
  EXPECT_THROW(add(std::vector<SymbolicTensor>{Input({3})}), ShapeError);
  EXPECT_EQ(add(std::vector<SymbolicTensor>{Input({3}), Input({3})})[0].shape(), (Shape{-1, 3}));
}

// Keras' squeeze-and-excitation block, which needs the broadcast: the channel weights [N, C] scale the feature map
// [N, H, W, C]. It trains, and a model rebuilt from its config (Maximum and Minimum among its layers) predicts the
// same.
TEST(Merge, ASqueezeAndExcitationModelTrainsAndRoundTripsThroughItsConfig) {
  auto in = Input({6, 6, 3});
  auto features = layers::Conv2D({.filters = 4, .kernel_size = {3, 3}, .activation = "relu"})(in);
  auto squeezed = layers::GlobalAveragePooling2D()(features);
  auto hidden = layers::Dense({.units = 2, .activation = "relu"})(squeezed);
  auto excite = layers::Dense({.units = 4, .activation = "sigmoid"})(hidden);
  auto scaled = layers::Multiply()(std::vector<SymbolicTensor>{features, excite});
  auto bounded = layers::Maximum()(std::vector<SymbolicTensor>{scaled, layers::Minimum()(std::vector<SymbolicTensor>{
                                                                            scaled, excite})});
  auto out = layers::Dense({.units = 3, .activation = "softmax"})(layers::Flatten()(bounded));
  Model model({in}, {out});
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  const Tensor x = testing::random_tensor({32, 6, 6, 3}, 1);
  std::vector<float> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 3);
  const Tensor y = Tensor::from_vector(labels, {32});
  const callbacks::History history = model.fit(x, y, {.epochs = 20, .batch_size = 32, .verbose = 0});
  EXPECT_LT(history["loss"].back(), history["loss"].front());
  EXPECT_TRUE(std::isfinite(history["loss"].back()));

  Model copy(model_from_config(model->serialize()));
  copy.set_weights(model.get_weights());
  const std::vector<float> a = model.predict(x).to_vector(), b = copy.predict(x).to_vector();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(Merge, MaximumAndMinimumConfigsRoundTrip) {
  layers::Maximum max({.name = "most"});
  testing::check_config_roundtrip(max);
  layers::Minimum min({.name = "least"});
  testing::check_config_roundtrip(min);
}

}  // namespace
}  // namespace tower
