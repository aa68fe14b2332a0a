#include "api/models/model.h"

#include <filesystem>
#include <functional>

#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using layers::Dense;

TEST(Model, FunctionalWithSeveralInputsAndOutputs) {
  auto a = Input({4}, "in_a");
  auto b = Input({2}, "in_b");
  auto h = Dense({.units = 3, .name = "ha"})(a);
  auto g = Dense({.units = 3, .name = "hb"})(b);
  Model m({a, b}, {h, g}, "two_towers");
  EXPECT_EQ(m.name(), "two_towers");
  EXPECT_EQ(m.inputs().size(), 2u);
  EXPECT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.layers().size(), 4u);  // two InputLayers and two Dense, as Keras lists them
  EXPECT_EQ(m.get_layer("hb")->type(), "Dense");
  EXPECT_THROW(m.get_layer("nope"), std::invalid_argument);
  EXPECT_EQ(m.count_params(), 4 * 3 + 3 + 2 * 3 + 3);
}

TEST(Model, SequentialBuildsFromAnInputLayerOrOnDemand) {
  Sequential s({InputLayer({.shape = {8}}), Dense({.units = 4}), Dense({.units = 2})});
  EXPECT_EQ(s.layers().size(), 2u);  // Sequential does not list its InputLayer
  EXPECT_EQ(s.outputs()[0].shape(), (Shape{-1, 2}));

  Sequential lazy;
  lazy.add(Dense({.units = 4}));
  EXPECT_THROW(lazy.summary_string(), std::logic_error);  // no input shape yet
  lazy.build({3});
  lazy.add(Dense({.units = 1}));
  EXPECT_EQ(lazy.count_params(), 3 * 4 + 4 + 4 + 1);
}

TEST(Model, SequentialAddOfAMismatchedLayerThrowsAndLeavesTheModelUnchanged) {
  Dense fixed({.units = 2, .name = "fixed"});
  fixed(Input({5}));  // built for 5 inputs
  Sequential s({InputLayer({.shape = {3}}), Dense({.units = 4})});
  EXPECT_THROW(s.add(fixed), ShapeError);
  EXPECT_EQ(s.layers().size(), 1u);
  EXPECT_EQ(s.outputs()[0].shape(), (Shape{-1, 4}));
}

TEST(Model, ModelsNestAsLayers) {
  Sequential base({InputLayer({.shape = {6}}), Dense({.units = 4})}, "base");
  auto x = Input({6});
  auto y = Dense({.units = 2})(base(x));
  Model m(x, y);
  EXPECT_EQ(m.count_params(), base.count_params() + 4 * 2 + 2);
  base.set_trainable(false);
  EXPECT_EQ(m.trainable_weights().size(), 2u);
}

TEST(Model, DisconnectedOutputNamesTheMissingInput) {
  auto a = Input({4}, "used");
  auto b = Input({4}, "forgotten");
  auto y = Dense({.units = 2, .name = "fc"})(b);
  try {
    Model m(a, y);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("disconnected"), std::string::npos) << msg;
    EXPECT_NE(msg.find("forgotten"), std::string::npos) << msg;
  }
}

TEST(Model, AModelContainingItselfIsACycle) {
  Sequential s({InputLayer({.shape = {4}}), Dense({.units = 4})}, "loop");
  try {
    s.add(s);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  // Indirect: a -> b -> a.
  Sequential a({InputLayer({.shape = {4}}), Dense({.units = 4})}, "outer_a");
  Sequential b({InputLayer({.shape = {4}}), Dense({.units = 4})}, "outer_b");
  a.add(b);
  EXPECT_THROW(b.add(a), ShapeError);
}

TEST(Model, NonInputTensorAsModelInputIsRejected) {
  auto x = Input({4});
  auto h = Dense({.units = 3})(x);
  auto y = Dense({.units = 2})(h);
  EXPECT_THROW(Model(h, y), ShapeError);
}

TEST(Model, SummaryPrintsKerasTable) {
  clear_session();
  Sequential s({InputLayer({.shape = {784}}), Dense({.units = 256, .activation = "relu"}),
                Dense({.units = 10, .activation = "softmax"})});
  const std::string text = s.summary_string();
  EXPECT_NE(text.find("Model: \"sequential\""), std::string::npos) << text;
  EXPECT_NE(text.find("dense (Dense)"), std::string::npos) << text;
  EXPECT_NE(text.find("(None, 256)"), std::string::npos) << text;
  EXPECT_NE(text.find("200,960"), std::string::npos) << text;
  EXPECT_NE(text.find("Total params: 203,530 (795.04 KB)"), std::string::npos) << text;
  EXPECT_NE(text.find("Non-trainable params: 0 (0.00 B)"), std::string::npos) << text;
}

TEST(Model, FunctionalSummaryHasConnectedTo) {
  clear_session();
  auto x = Input({4});
  auto h = Dense({.units = 3, .name = "h"})(x);
  auto y = Dense({.units = 2, .name = "y"})(h);
  Model m(x, y);
  const std::string text = m.summary_string();
  EXPECT_NE(text.find("Connected to"), std::string::npos) << text;
  EXPECT_NE(text.find("input_layer (InputLayer)"), std::string::npos) << text;
  EXPECT_NE(text.find("h[0][0]"), std::string::npos) << text;
}

TEST(Model, LayerNamesAreUniquePerType) {
  clear_session();
  Dense a({.units = 1}), b({.units = 1});
  EXPECT_EQ(a->name(), "dense");
  EXPECT_EQ(b->name(), "dense_1");
  EXPECT_EQ(to_snake_case("BatchNormalization"), "batch_normalization");
  EXPECT_EQ(to_snake_case("Conv2D"), "conv2d");
  EXPECT_EQ(to_snake_case("GlobalAveragePooling2D"), "global_average_pooling2d");
}

std::vector<std::string> layer_names(const Model& m) {
  std::vector<std::string> out;
  for (const LayerPtr& l : m.layers()) out.push_back(l->name());
  return out;
}

std::vector<std::string> weight_paths(const Model& m) {
  std::vector<std::string> out;
  for (const VariablePtr& v : m.weights()) out.push_back(v->path);
  return out;
}

TEST(Model, LayersAreInKerasOrderNotCreationOrder) {
  // Keras 3 (keras/src/ops/function.py map_graph) orders a functional model's layers by depth from the outputs,
  // ties in the order a walk from the outputs first meets them; the lists below are Keras 3.15's.
  auto x = Input({3}, "x");
  auto a = Dense({.units = 3, .name = "a1"})(x);
  a = Dense({.units = 3, .name = "a2"})(a);
  auto b = Dense({.units = 3, .name = "b1"})(x);
  Model m(x, layers::Add({.name = "add"})({b, a}), "branches");
  EXPECT_EQ(layer_names(m), (std::vector<std::string>{"x", "a1", "b1", "a2", "add"}));
  EXPECT_EQ(weight_paths(m), (std::vector<std::string>{"a1/kernel", "a1/bias", "b1/kernel", "b1/bias", "a2/kernel",
                                                       "a2/bias"}));
  const std::string text = m.summary_string();
  EXPECT_LT(text.find("b1 (Dense)"), text.find("a2 (Dense)")) << text;

  // A shared layer sits at its deepest call; an unused input comes first among the layers as deep as an output.
  auto in = Input({4}, "in");
  auto unused = Input({4}, "unused");
  Dense shared({.units = 4, .name = "A"});
  auto a1 = shared(in);
  auto a2 = shared(Dense({.units = 4, .name = "B"})(a1));
  auto c = Dense({.units = 3, .name = "C"})(a2);
  auto d = Dense({.units = 3, .name = "D"})(a1);
  Model s({in, unused}, {layers::Concatenate({.name = "cat"})({c, d}), d}, "shared");
  EXPECT_EQ(layer_names(s), (std::vector<std::string>{"in", "A", "B", "C", "D", "unused", "cat"}));
}

TEST(Model, ConfigListsLayersAndTheirInboundNodes) {
  auto x = Input({4}, "x");
  auto y = Dense({.units = 2, .name = "out"})(x);
  Model m(x, y, "cfg");
  const Config c = m->get_config();
  EXPECT_EQ(c.at("name").as_string(), "cfg");
  ASSERT_EQ(c.at("layers").size(), 2u);
  const Config& dense = c.at("layers").as_list()[1];
  EXPECT_EQ(dense.at("class_name").as_string(), "Dense");
  EXPECT_EQ(dense.at("inbound_nodes").to_json(), "[[[\"x\", 0, 0]]]");
}

}  // namespace
}  // namespace tower

namespace tower {
namespace {

TEST(Model, SummaryOfKerasSimpleMnistConvnet) {
  // keras.io's "Simple MNIST convnet": Keras reports 34,826 parameters.
  clear_session();
  Sequential model({InputLayer({.shape = {28, 28, 1}}),
                    layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
                    layers::MaxPooling2D({.pool_size = 2}),
                    layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
                    layers::MaxPooling2D({.pool_size = 2}), layers::Flatten(), layers::Dropout({.rate = 0.5}),
                    layers::Dense({.units = 10, .activation = "softmax"})});
  EXPECT_EQ(model.count_params(), 34826);
  const std::string text = model.summary_string();
  for (const char* row : {"conv2d (Conv2D)", "(None, 26, 26, 32)", "320", "(None, 13, 13, 32)", "18,496",
                          "(None, 5, 5, 64)", "(None, 1600)", "16,010", "Total params: 34,826 (136.04 KB)",
                          "Trainable params: 34,826 (136.04 KB)"})
    EXPECT_NE(text.find(row), std::string::npos) << row << "\n" << text;
}

TEST(Model, AddOfUnequalShapesNamesTheLayerAndBothShapes) {
  auto a = Input({4});
  auto b = Input({5});
  try {
    layers::Add({.name = "sum"})({a, b});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'sum'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 5)"), std::string::npos) << msg;
  }
}

TEST(Model, ConcatenateOnAWrongAxisNamesTheAxisAndShapes) {
  auto a = Input({4, 3});
  auto b = Input({5, 3});
  try {
    layers::Concatenate({.axis = -1, .name = "cat"})({a, b});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'cat'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 5, 3)"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(layers::Concatenate({.axis = 1})({a, b}));
}

TEST(Model, ResidualConvnetTrainsEndToEndGradients) {
  auto x = Input({6, 6, 2});
  auto h = layers::Conv2D({.filters = 3, .kernel_size = 3, .padding = "same", .activation = "tanh"})(x);
  auto r = layers::Conv2D({.filters = 3, .kernel_size = 3, .padding = "same"})(h);
  auto y = layers::Add()({h, r});
  auto out = layers::Dense({.units = 2})(layers::GlobalAveragePooling2D()(y));
  Model m(x, out, "residual");
  testing::check_gradients(m, {testing::random_tensor({2, 6, 6, 2}, 9)});
}

}  // namespace
}  // namespace tower

namespace tower {
namespace {

using layers::Dense;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(Model, DuplicateLayerNamesAreRefusedWhenTheModelIsBuilt) {
  // Keras: ValueError 'The name "d" is used 2 times in the model. All operation names should be unique.'
  auto x = Input({3}, "x");
  auto h = Dense({.units = 2, .name = "d"})(x);
  auto y = Dense({.units = 2, .name = "d"})(h);
  const std::string msg = message_of([&] { Model(x, y, "dup"); });
  EXPECT_NE(msg.find("The name \"d\" is used 2 times in the model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'dup'"), std::string::npos) << msg;

  // Sequential refuses the layer when it is added, built or not (Keras' add()).
  Sequential s({InputLayer({.shape = {3}}), Dense({.units = 2, .name = "d"})});
  const std::string seq_msg = message_of([&] { s.add(Dense({.units = 2, .name = "d"})); });
  EXPECT_NE(seq_msg.find("'d' is already the name of a layer"), std::string::npos) << seq_msg;
  EXPECT_EQ(s.layers().size(), 1u);
  Sequential lazy({Dense({.units = 2, .name = "e"})});
  EXPECT_THROW(lazy.add(Dense({.units = 2, .name = "e"})), std::invalid_argument);

  // Names count per level: a nested model may hold a layer named like one of the outer model's.
  auto i = Input({3});
  Model inner(i, Dense({.units = 2, .name = "d"})(i), "inner");
  auto o = Input({3});
  EXPECT_NO_THROW(Model(o, Dense({.units = 2, .name = "d"})(inner(o))));
}

TEST(Model, PopAndAddAfterPredictRebuildThePlans) {
  Sequential s({InputLayer({.shape = {3}}), Dense({.units = 4}), Dense({.units = 2})});
  const Tensor x = testing::random_tensor({5, 3}, 1);
  EXPECT_EQ(s.predict(x).shape(), (Shape{5, 2}));
  s.pop();
  EXPECT_EQ(s.predict(x).shape(), (Shape{5, 4}));
  s.add(Dense({.units = 6}));
  EXPECT_EQ(s.predict(x).shape(), (Shape{5, 6}));
  // Training plans and compiled steps are remade too.
  s.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  s.fit(x, Tensor::zeros({5, 6}), {.epochs = 1, .batch_size = 5, .verbose = 0});
  s.pop();
  s.add(Dense({.units = 1}));
  // As in Keras, the optimizer keeps the variables it was built for: new layers train after a new compile().
  s.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  s.fit(x, Tensor::zeros({5, 1}), {.epochs = 1, .batch_size = 5, .verbose = 0});
  EXPECT_EQ(s.predict(x).shape(), (Shape{5, 1}));
}

// inner = (d0: Dense 2, d1: Dense 4) on 3 inputs, outer = inner -> head (Dense 1), inner frozen, then d1 unfrozen;
// Keras' results are in tests/reference/models/freezing.json (tests/reference/make_model_fixtures.py).
struct FrozenInner {
  Model inner;
  Model outer;
};

FrozenInner frozen_inner_with_d1_unfrozen() {
  auto i = Input({3}, "ii");
  auto h = Dense({.units = 2, .name = "d0"})(i);
  Model inner(i, Dense({.units = 4, .name = "d1"})(h), "inner");
  auto x = Input({3}, "x");
  Model outer(x, Dense({.units = 1, .name = "head"})(inner(x)), "outer");
  inner.set_trainable(false);
  inner.get_layer("d1")->set_trainable(true);
  return {inner, outer};
}

std::vector<std::string> paths(const std::vector<VariablePtr>& vs) {
  std::vector<std::string> out;
  for (const VariablePtr& v : vs) out.push_back(v->path);
  return out;
}

std::vector<std::string> strings(const Config& list) {
  std::vector<std::string> out;
  for (const Config& c : list.as_list()) out.push_back(c.as_string());
  return out;
}

// outer and inner against one state of freezing.json.
void expect_keras_state(const Model& outer, const Config& keras) {
  const auto inner = std::dynamic_pointer_cast<ModelImpl>(outer.get_layer("inner"));
  ASSERT_TRUE(inner);
  EXPECT_EQ(paths(outer.trainable_weights()), strings(keras.at("outer_trainable")));
  EXPECT_EQ(paths(outer.non_trainable_weights()), strings(keras.at("outer_non_trainable")));
  EXPECT_EQ(inner->trainable(), keras.at("inner_trainable").as_bool());
  EXPECT_EQ(paths(inner->trainable_weights()), strings(keras.at("inner_trainable_weights")));
  const std::string text = outer.summary_string();
  const std::string trainable = "Trainable params: " + std::to_string(keras.at("trainable_params").as_int()) + " (";
  const std::string frozen = "Non-trainable params: " + std::to_string(keras.at("non_trainable_params").as_int()) + " (";
  EXPECT_NE(text.find(" " + trainable), std::string::npos) << trainable << "\n" << text;
  EXPECT_NE(text.find(frozen), std::string::npos) << frozen << "\n" << text;
}

TEST(Model, ALayerUnfrozenInsideAFrozenNestedModelTrains) {
  const Config keras = testing::read_json_fixture("models/freezing.json");
  FrozenInner m = frozen_inner_with_d1_unfrozen();
  expect_keras_state(m.outer, keras.at("before_save"));
  EXPECT_EQ(m.inner.get_layer("d1")->trainable_weights().size(), 2u);
  EXPECT_TRUE(m.inner.get_layer("d0")->trainable_weights().empty());

  // fit moves d1 and head, not d0.
  const std::vector<Tensor> before = m.outer.get_weights();
  m.outer.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  m.outer.fit(testing::random_tensor({4, 3}, 4), Tensor::full({4, 1}, 3.f), {.epochs = 1, .batch_size = 4, .verbose = 0});
  const std::vector<Tensor> after = m.outer.get_weights();
  ASSERT_EQ(after.size(), 6u);  // d0 kernel, bias, d1 kernel, bias, head kernel, bias
  EXPECT_EQ(before[0].to_vector(), after[0].to_vector());
  EXPECT_NE(before[2].to_vector(), after[2].to_vector());
  EXPECT_NE(before[4].to_vector(), after[4].to_vector());
}

TEST(Model, AFrozenNestedModelStaysFrozenThroughSaveAndLoad) {
  // Keras' functional_from_config restores the model's own flag; its layers keep theirs (d1 trains on).
  const Config keras = testing::read_json_fixture("models/freezing.json");
  FrozenInner m = frozen_inner_with_d1_unfrozen();
  const std::string path = (std::filesystem::temp_directory_path() / "tower_frozen_inner.tower").string();
  m.outer.save(path);
  expect_keras_state(Model::load(path), keras.at("after_load"));
  std::filesystem::remove(path);

  auto x = Input({3});
  Model top(x, Dense({.units = 1})(x));
  top.set_trainable(false);
  Model top_copy(model_from_config(top->serialize()));
  EXPECT_EQ(top_copy.trainable(), keras.at("frozen_top_after_load").as_bool());
  EXPECT_TRUE(top_copy.trainable_weights().empty());
}


// Keras builds a Sequential without an input shape on the first data it sees: predict, compile then fit,
// evaluate, train_on_batch, all without build().
TEST(Model, ASequentialWithoutAnInputShapeIsBuiltByItsFirstData) {
  const Tensor x = testing::random_tensor({6, 3}, 1);
  Sequential p({Dense({.units = 2})});
  EXPECT_EQ(p.predict(x).shape(), (Shape{6, 2}));
  EXPECT_EQ(p.count_params(), 3 * 2 + 2);

  Sequential f({Dense({.units = 4}), Dense({.units = 1})});
  f.compile(optimizers::SGD(0.1), losses::MeanSquaredError());  // before it has an input shape
  f.fit(x, Tensor::zeros({6, 1}), {.epochs = 1, .batch_size = 3, .verbose = 0});
  EXPECT_EQ(f.count_params(), 3 * 4 + 4 + 4 + 1);

  Sequential e({Dense({.units = 1, .name = "out"})});
  e.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  EXPECT_TRUE(e.evaluate(x, Tensor::zeros({6, 1}), {.verbose = 0}).get("loss"));
  Sequential t({Dense({.units = 1})});
  t.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  EXPECT_TRUE(t.train_on_batch(x, Tensor::zeros({6, 1})).get("loss"));
}

// Looking at the first element leaves a shuffled dataset's order as it was: a Sequential built by its data trains
// exactly as one built beforehand.
TEST(Model, BuildingFromTheFirstDataKeepsTheShuffleOrder) {
  const Tensor x = testing::random_tensor({12, 3}, 2), y = testing::random_tensor({12, 1}, 3);
  const auto train = [&](bool prebuilt) {
    Sequential m({Dense({.units = 1, .kernel_initializer = "ones"})});
    if (prebuilt) m.build({3});
    m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
    m.fit(data::Dataset::from_tensor_slices({x, y}).shuffle(12, 7).batch(4), {.epochs = 2, .verbose = 0});
    return m.get_weights()[0];
  };
  const Tensor built_by_data = train(false), built_before = train(true);
  for (Index i = 0; i < built_before.numel(); ++i)
    EXPECT_EQ(built_by_data.data<float>()[i], built_before.data<float>()[i]) << i;
}

// Keras: a Sequential without an input shape called on a symbolic tensor is built for that tensor.
TEST(Model, ASequentialWithoutAnInputShapeCalledOnASymbolicTensorIsBuiltForIt) {
  Sequential inner({Dense({.units = 4}), Dense({.units = 2})});
  const SymbolicTensor in = Input({3});
  const SymbolicTensor out = inner(in);
  EXPECT_EQ(out.shape(), (Shape{-1, 2}));
  Model outer(in, out);
  EXPECT_EQ(outer.count_params(), 3 * 4 + 4 + 4 * 2 + 2);
  EXPECT_EQ(outer.predict(testing::random_tensor({5, 3}, 4)).shape(), (Shape{5, 2}));
}

}  // namespace
}  // namespace tower
