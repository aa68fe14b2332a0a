#include "layers/merge.h"

#include "layers/add.h"
#include "layers/average.h"
#include "layers/concatenate.h"
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
          layers::Average({.name = "m_avg"}), layers::Concatenate({.name = "m_cat"})};
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

TEST(Merge, NoBroadcasting) {
  layers::Add add;
  EXPECT_THROW(add(std::vector<SymbolicTensor>{Input({3, 4}), Input({1, 4})}), ShapeError);
  layers::Multiply mul;
  EXPECT_THROW(mul(std::vector<SymbolicTensor>{Input({4}), Input({3, 4})}), ShapeError);
}

TEST(Merge, ABadCallLeavesTheLayerUsable) {
  layers::Add add;
  EXPECT_THROW(add(std::vector<SymbolicTensor>{Input({3})}), ShapeError);
  EXPECT_EQ(add(std::vector<SymbolicTensor>{Input({3}), Input({3})})[0].shape(), (Shape{-1, 3}));
}

}  // namespace
}  // namespace tower
