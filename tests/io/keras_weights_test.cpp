// Keras weight files against Keras itself: tests/reference/keras_weights/convnet.*, nested.*, resnet.* and
// branched.* were written by Keras (tests/reference/make_keras_weights_fixtures.py) for a small convnet, a model
// nesting another, a ResNet-style block whose shortcut is made first and a nested branched model, which the
// functions below rebuild in Tower. Tower loads each file and must reproduce Keras' outputs stored beside them.
#include "api/models/keras_weights.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "api/io/hdf5_file.h"
#include "io/keras_weights_testing.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using testing::keras_weights_fixture;

struct ConvnetVariant {
  bool branch_b_first = false;  // call branch_b before branch_a: Keras' layer order stays the same
  bool branch_a_bias = true;
  int logits_units = 5;
  std::string logits_name = "logits";
  bool logits = true;        // false: no Dense at the end (one layer with weights fewer than the files)
  bool extra_dense = false;  // a Dense "extra" after logits (one layer with weights more than the files)
};

// The fixture script's convnet(), layer for layer.
Model convnet(const ConvnetVariant& v = {}) {
  SymbolicTensor x = Input({8, 8, 3}, "image");
  SymbolicTensor y = layers::Conv2D({.filters = 8, .kernel_size = 3, .strides = 2, .padding = "same",
                                     .use_bias = false, .name = "stem"})(x);
  y = layers::BatchNormalization({.name = "stem_bn"})(y);
  y = layers::ReLU({.max_value = 6.f, .name = "stem_relu"})(y);
  y = layers::DepthwiseConv2D({.kernel_size = 3, .padding = "same", .name = "dw"})(y);
  y = layers::BatchNormalization({.name = "dw_bn"})(y);
  y = layers::ReLU({.name = "dw_relu"})(y);
  layers::Conv2D branch_a({.filters = 6, .kernel_size = 1, .use_bias = v.branch_a_bias, .name = "branch_a"});
  layers::Conv2D branch_b({.filters = 6, .kernel_size = 1, .name = "branch_b"});
  SymbolicTensor a, b;
  if (v.branch_b_first) {
    b = branch_b(y);
    a = branch_a(y);
  } else {
    a = branch_a(y);
    b = branch_b(y);
  }
  y = layers::Subtract({.name = "subtract"})({a, b});
  y = layers::GlobalAveragePooling2D({.name = "pool"})(y);
  if (v.logits) y = layers::Dense({.units = v.logits_units, .name = v.logits_name})(y);
  if (v.extra_dense) y = layers::Dense({.units = 2, .name = "extra"})(y);
  return Model(x, y, "convnet");
}

// The fixture script's nested(): a model inside a model.
Model nested() {
  SymbolicTensor x = Input({6, 6, 2}, "inner_image");
  SymbolicTensor y = layers::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same", .name = "inner_conv"})(x);
  y = layers::BatchNormalization({.name = "inner_bn"})(y);
  Model inner(x, y, "inner");
  SymbolicTensor z_in = Input({6, 6, 2}, "image");
  SymbolicTensor z = layers::Conv2D({.filters = 2, .kernel_size = 1, .name = "outer_conv"})(z_in);
  z = inner(z);
  z = layers::GlobalAveragePooling2D({.name = "pool"})(z);
  z = layers::Dense({.units = 3, .name = "head"})(z);
  return Model(z_in, z, "outer");
}

// The fixture script's resnet(): the shortcut is made first, yet Keras lists it after conv_b. With
// `keras_names` false every layer gets Tower's automatic name (conv2d_7, ...), which Keras' loading ignores.
Model resnet(bool keras_names = true) {
  const auto n = [&](const char* name) { return keras_names ? std::string(name) : std::string(); };
  SymbolicTensor x = Input({6, 6, 3}, n("image"));
  SymbolicTensor shortcut = layers::Conv2D({.filters = 4, .kernel_size = 1, .name = n("shortcut")})(x);
  SymbolicTensor y = layers::Conv2D({.filters = 4, .kernel_size = 1, .name = n("conv_a")})(x);
  y = layers::BatchNormalization({.name = n("bn_a")})(y);
  y = layers::ReLU({.name = n("relu_a")})(y);
  y = layers::Conv2D({.filters = 4, .kernel_size = 1, .name = n("conv_b")})(y);
  y = layers::BatchNormalization({.name = n("bn_b")})(y);
  y = layers::Add({.name = n("add")})({y, shortcut});
  y = layers::ReLU({.name = n("relu")})(y);
  y = layers::GlobalAveragePooling2D({.name = n("pool")})(y);
  y = layers::Dense({.units = 3, .name = n("logits")})(y);
  return Model(x, y, keras_names ? "resnet" : "");
}

// The fixture script's branched(): a nested model whose layers Keras lists block_in, a1, b1, a2, block_add.
Model branched() {
  SymbolicTensor x = Input({5}, "block_in");
  SymbolicTensor a = layers::Dense({.units = 5, .name = "a1"})(x);
  a = layers::Dense({.units = 5, .name = "a2"})(a);
  SymbolicTensor b = layers::Dense({.units = 5, .name = "b1"})(x);
  Model block(x, layers::Add({.name = "block_add"})({b, a}), "block");
  SymbolicTensor z_in = Input({5}, "features");
  SymbolicTensor z = layers::Dense({.units = 2, .name = "head"})(block(z_in));
  return Model(z_in, z, "branched");
}

// The fixture script's recurrent(): SimpleRNN, LSTM and GRU, whose weights Keras files keep in their cells' groups.
Model recurrent() {
  SymbolicTensor x = Input({6, 4}, "sequence");
  SymbolicTensor y = layers::SimpleRNN({.units = 4, .return_sequences = true, .name = "rnn"})(x);
  y = layers::LSTM({.units = 5, .return_sequences = true, .name = "lstm"})(y);
  y = layers::GRU({.units = 3, .name = "gru"})(y);
  return Model(x, layers::Dense({.units = 2, .name = "head"})(y), "recurrent");
}

// The fixture script's wrappers(): TimeDistributed and Bidirectional, whose layers' weights Keras files keep below
// the wrapper's group.
Model wrappers() {
  SymbolicTensor x = Input({5, 3}, "sequence");
  SymbolicTensor y = layers::TimeDistributed({.layer = layers::Dense({.units = 4, .name = "step_dense"}),
                                              .name = "per_step"})(x);
  y = layers::Bidirectional({.layer = layers::LSTM({.units = 3, .return_sequences = true, .name = "lstm"}),
                             .name = "bi_lstm"})(y);
  y = layers::Bidirectional({.layer = layers::GRU({.units = 2, .name = "gru"}), .merge_mode = "sum", .name = "bi_gru"})(y);
  return Model(x, layers::Dense({.units = 2, .name = "head"})(y), "wrappers");
}

Model fixture_model(const std::string& name) {
  if (name == "wrappers") return wrappers();
  if (name == "recurrent") return recurrent();
  if (name == "nested") return nested();
  if (name == "resnet") return resnet();
  if (name == "branched") return branched();
  return convnet();
}

std::vector<std::string> layer_names(const ModelImpl& m) {
  std::vector<std::string> out;
  for (const LayerPtr& l : m.layers()) out.push_back(l->name());
  return out;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("tower_keras_weights_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void expect_same_weights(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector(), b[i].to_vector()) << "weight " << i;
}

// Loads `file` into the convnet and compares its outputs with Keras'.
void expect_loads_like_keras(const std::string& file, const ConvnetVariant& variant = {}) {
  SCOPED_TRACE(file);
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("convnet");
  Model m = convnet(variant);
  m.load_weights(file);
  testing::expect_near(m.predict(f.inputs), f.outputs, testing::kKerasAtol, testing::kKerasRtol, "convnet outputs");
}

TEST(KerasWeights, FormatIsChosenByTheFileName) {
  EXPECT_EQ(io::keras_weights_format("a/m.weights.h5"), io::KerasWeightsFormat::keras3);
  EXPECT_EQ(io::keras_weights_format("m.h5"), io::KerasWeightsFormat::legacy);
  EXPECT_EQ(io::keras_weights_format("m.hdf5"), io::KerasWeightsFormat::legacy);
  EXPECT_EQ(io::keras_weights_format("m.weights"), io::KerasWeightsFormat::none);
  EXPECT_EQ(io::keras_weights_format("h5"), io::KerasWeightsFormat::none);
}

TEST(KerasWeights, KerasLayerOrderIsTowers) {
  // Keras 3 files address layers by class and position in model.layers; Tower writes them the same way.
  for (const std::string name : {"convnet", "nested", "resnet", "branched", "recurrent", "wrappers"}) {
    SCOPED_TRACE(name);
    const testing::KerasOutputsFixture f = testing::read_keras_outputs(name);
    const Model m = fixture_model(name);
    EXPECT_EQ(layer_names(m.impl()), f.layers);
    for (const auto& [nested_name, names] : f.nested_layers)
      EXPECT_EQ(layer_names(dynamic_cast<const ModelImpl&>(*m.impl().get_layer(nested_name))), names) << nested_name;
  }
  EXPECT_EQ(layer_names(convnet({.branch_b_first = true}).impl()), testing::read_keras_outputs("convnet").layers);
}

TEST(KerasWeights, LoadsKeras3WeightsH5) { expect_loads_like_keras(keras_weights_fixture("convnet.weights.h5")); }

TEST(KerasWeights, LoadsLegacyH5AtTheRoot) { expect_loads_like_keras(keras_weights_fixture("convnet.h5")); }

TEST(KerasWeights, LoadsLegacyH5BelowModelWeights) {
  expect_loads_like_keras(keras_weights_fixture("convnet_model.h5"));
}

TEST(KerasWeights, LoadsKeras2LayoutWithFixedLengthNames) {
  expect_loads_like_keras(keras_weights_fixture("convnet_keras2.h5"));
}

TEST(KerasWeights, LoadsLegacyH5WithChunkedLayerNames) {
  expect_loads_like_keras(keras_weights_fixture("convnet_chunked.h5"));
}

TEST(KerasWeights, LoadsNestedModels) {
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("nested");
  for (const char* file : {"nested.weights.h5", "nested.h5"}) {
    SCOPED_TRACE(file);
    Model m = nested();
    m.load_weights(keras_weights_fixture(file));
    testing::expect_near(m.predict(f.inputs), f.outputs, testing::kKerasAtol, testing::kKerasRtol, "nested outputs");
  }
}

TEST(KerasWeights, LoadsInKerasLayerOrderWhateverOrderTheLayersWereCalledIn) {
  // branch_a and branch_b have the same shapes: read in call order, they would swap without an error and
  // change the output's sign.
  expect_loads_like_keras(keras_weights_fixture("convnet.weights.h5"), {.branch_b_first = true});
  expect_loads_like_keras(keras_weights_fixture("convnet.h5"), {.branch_b_first = true});
}

// Loads `file` into `m` and compares its outputs on `fixture`'s inputs with Keras'.
void expect_outputs_like_keras(Model m, const std::string& fixture, const std::string& file, float atol = 1e-6f,
                               float rtol = 0.f) {
  SCOPED_TRACE(file);
  const testing::KerasOutputsFixture f = testing::read_keras_outputs(fixture);
  m.load_weights(keras_weights_fixture(file));
  testing::expect_near(m.predict(f.inputs), f.outputs, atol, rtol, fixture + " outputs");
}

TEST(KerasWeights, LoadsBranchedModelsLikeKeras) {
  // resnet: the shortcut (made first) and conv_a have one shape; branched: a1, a2 and b1 have one shape. Keras'
  // files hold them in Keras' layer order, with and without the name attributes Keras 3.6+ writes.
  for (const char* file : {"resnet.weights.h5", "resnet_unnamed.weights.h5", "resnet.h5"})
    expect_outputs_like_keras(resnet(), "resnet", file);
  for (const char* file : {"branched.weights.h5", "branched.h5"}) expect_outputs_like_keras(branched(), "branched", file);
}

TEST(KerasWeights, LoadsRecurrentLayersAndWrappersFromTheirLayersGroups) {
  for (const std::string name : {"recurrent", "wrappers"})
    for (const std::string file : {name + ".weights.h5", name + ".h5"})
      expect_outputs_like_keras(fixture_model(name), name, file, testing::kKerasAtol, testing::kKerasRtol);
}

TEST(KerasWeights, LoadsByStructureWhateverTheLayersAreNamed) {
  // Keras 3 reads a .weights.h5 by its group names (class and position in model.layers) and a legacy .h5 by
  // position, so a file loads into any model of that structure: here every layer has an automatic name, and
  // how many layers the process made before changes those names.
  for (int made_before = 0; made_before < 2; ++made_before) {
    for (int i = 0; i < made_before; ++i) layers::Dense({.units = 1});
    for (const char* file : {"resnet.weights.h5", "resnet_unnamed.weights.h5", "resnet.h5"})
      expect_outputs_like_keras(resnet(false), "resnet", file);
  }
  expect_loads_like_keras(keras_weights_fixture("convnet_keras2.h5"), {.logits_name = "head"});
}

TEST(KerasWeights, RoundTripThroughWeightsH5IsExact) {
  const fs::path p = temp_dir() / "roundtrip.weights.h5";
  Model a = convnet(), b = convnet();
  testing::randomize_weights(a, 11, true);
  a.save_weights(p.string());
  b.load_weights(p.string());
  expect_same_weights(b.get_weights(), a.get_weights());
  const Tensor x = testing::random_tensor({3, 8, 8, 3}, 5);
  testing::expect_near(b.predict(x), a.predict(x), 0.f, 0.f, "outputs after the round trip");
}

// Every group and dataset under `g` as "path" -> "name attribute" (groups) or "shape" (datasets).
void list_tree(const io::Hdf5Group& g, std::map<std::string, std::string>& out) {
  for (const std::string& c : g.children()) {
    const std::string path = g.path() == "/" ? "/" + c : g.path() + "/" + c;
    if (g.has_dataset(c)) {
      out[path] = g.dataset_shape(c).to_string();
    } else {
      const io::Hdf5Group child = g.group(c);
      out[path] = child.has_attribute("name") ? "name=" + child.string_attribute("name") : "";
      list_tree(child, out);
    }
  }
}

TEST(KerasWeights, WritesKerasOwnGroupLayout) {
  // Every group, dataset shape and name attribute, as Keras writes them for the same model.
  for (const std::string name : {"convnet", "nested", "resnet", "branched", "recurrent", "wrappers"}) {
    SCOPED_TRACE(name);
    const fs::path p = temp_dir() / (name + "_layout.weights.h5");
    fixture_model(name).save_weights(p.string());
    std::map<std::string, std::string> tower, keras;
    list_tree(io::Hdf5File::open(p.string()), tower);
    list_tree(io::Hdf5File::open(keras_weights_fixture(name + ".weights.h5")), keras);
    EXPECT_EQ(tower, keras);
    if (name == "convnet") {
      EXPECT_EQ(tower["/layers/conv2d_1/vars"], "name=branch_a");
      EXPECT_EQ(tower["/layers/batch_normalization_1/vars/3"], "(8,)");
    } else if (name == "resnet") {
      EXPECT_EQ(tower["/layers/conv2d_2/vars"], "name=shortcut");
    } else if (name == "branched") {
      EXPECT_EQ(tower["/layers/functional/layers/dense_1/vars"], "name=b1");
    } else if (name == "wrappers") {
      EXPECT_EQ(tower["/layers/time_distributed/layer/vars"], "name=step_dense");
      EXPECT_EQ(tower["/layers/bidirectional/backward_layer/cell/vars/1"], "(3, 12)");
      EXPECT_EQ(tower["/layers/bidirectional_1/forward_layer/vars"], "name=forward_gru");
    } else if (name == "recurrent") {
      EXPECT_EQ(tower["/layers/lstm/cell/vars/1"], "(5, 20)");
      EXPECT_EQ(tower["/layers/gru/cell/vars/2"], "(2, 9)");
    } else {
      EXPECT_EQ(tower["/layers/functional/vars"], "name=inner");
      EXPECT_EQ(tower["/layers/functional/layers/conv2d/vars/0"], "(3, 3, 2, 4)");
    }
  }
}

TEST(KerasWeights, WritesFilesForKeras) {
  // With TOWER_KERAS_CHECK_DIR set, make_keras_weights_fixtures.py --check-tower then loads these files into
  // Keras and compares Keras' outputs with Tower's (see the script).
  const std::string dir = testing::keras_check_dir();
  for (const std::string name : {"convnet", "nested", "resnet", "branched", "recurrent", "wrappers"}) {
    SCOPED_TRACE(name);
    const testing::KerasOutputsFixture f = testing::read_keras_outputs(name);
    Model m = fixture_model(name);
    testing::randomize_weights(m, 2024, true);
    const Tensor y = m.predict(f.inputs);
    testing::write_files_for_keras(m, dir, name, f.inputs, y);
    Model back = fixture_model(name);
    back.load_weights((fs::path(dir) / ("tower_" + name + ".weights.h5")).string());
    testing::expect_near(back.predict(f.inputs), y, 0.f, 0.f, "outputs after reloading Tower's file");
  }
}

TEST(KerasWeights, SavingReplacesTheFileAtomically) {
  const fs::path dir = temp_dir() / "atomic";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path p = dir / "m.weights.h5";
  std::ofstream(p) << "previous contents";
  Model m = convnet();
  testing::randomize_weights(m, 3, true);
  m.save_weights(p.string());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"m.weights.h5"}) << "no temporary file may be left behind";
  Model back = convnet();
  back.load_weights(p.string());
  expect_same_weights(back.get_weights(), m.get_weights());
  testing::expect_throws_mentioning<std::runtime_error>(
      [&] { m.save_weights((dir / "no_such_dir" / "m.weights.h5").string()); }, {"no_such_dir/m.weights.h5"});
}

TEST(KerasWeights, SavingLegacyH5IsRefused) {
  const fs::path p = temp_dir() / "legacy.h5";
  testing::expect_throws_mentioning<std::invalid_argument>([&] { convnet().save_weights(p.string()); },
                                                           {p.string(), ".weights.h5"});
  EXPECT_FALSE(fs::exists(p));
}

// ---- bad files: each error names the file and the problem, and the model keeps its weights ----------------

void expect_load_fails(Model& m, const std::string& file, const std::vector<std::string>& words,
                       bool invalid_argument) {
  SCOPED_TRACE(file);
  const std::vector<Tensor> before = m.get_weights();
  std::vector<std::string> all = words;
  all.push_back(file);
  if (invalid_argument)
    testing::expect_throws_mentioning<std::invalid_argument>([&] { m.load_weights(file); }, all);
  else
    testing::expect_throws_mentioning<std::runtime_error>([&] { m.load_weights(file); }, all);
  expect_same_weights(m.get_weights(), before);
}

TEST(KerasWeightsErrors, MissingFile) {
  Model m = convnet();
  for (const char* name : {"missing.weights.h5", "missing.h5"})
    expect_load_fails(m, (temp_dir() / name).string(), {"No such file"}, false);
}

TEST(KerasWeightsErrors, NotAnHdf5File) {
  Model m = convnet();
  for (const char* name : {"text.weights.h5", "text.h5"}) {
    const fs::path p = temp_dir() / name;
    std::ofstream(p) << "this is not HDF5\n";
    expect_load_fails(m, p.string(), {"not an HDF5 file"}, false);
  }
}

TEST(KerasWeightsErrors, Hdf5FileInTheOtherLayout) {
  Model m = convnet();
  const fs::path as_keras3 = temp_dir() / "legacy_named.weights.h5";
  const fs::path as_legacy = temp_dir() / "keras3_named.h5";
  fs::copy_file(keras_weights_fixture("convnet.h5"), as_keras3, fs::copy_options::overwrite_existing);
  fs::copy_file(keras_weights_fixture("convnet.weights.h5"), as_legacy, fs::copy_options::overwrite_existing);
  expect_load_fails(m, as_keras3.string(), {"no group '/layers'", "not a Keras .weights.h5 file"}, false);
  expect_load_fails(m, as_legacy.string(), {"no attribute 'layer_names'"}, false);
}

TEST(KerasWeightsErrors, LayerMissingFromTheFile) {
  // Keras: "Layer 'dense_1' expected 2 variables, but received 0" (.weights.h5), "Layer count mismatch" (.h5).
  Model m = convnet({.extra_dense = true});
  expect_load_fails(m, keras_weights_fixture("convnet.weights.h5"),
                    {"layer 'extra' (Dense) is not in the file", "no group '/layers/dense_1'"}, true);
  for (const char* name : {"convnet.h5", "convnet_keras2.h5"})
    expect_load_fails(m, keras_weights_fixture(name),
                      {"layer count mismatch", "the model has 8 layers with weights", "the file 7"}, true);
}

TEST(KerasWeightsErrors, LegacyFileWithMoreLayersThanTheModel) {
  // Keras raises "Layer count mismatch" here; a Keras 3 .weights.h5 may hold more layers (Keras reads the ones it
  // needs by group name).
  Model m = convnet({.logits = false});
  for (const char* name : {"convnet.h5", "convnet_keras2.h5"})
    expect_load_fails(m, keras_weights_fixture(name),
                      {"layer count mismatch", "the model has 6 layers with weights", "the file 7", "logits"}, true);
  EXPECT_NO_THROW(m.load_weights(keras_weights_fixture("convnet.weights.h5")));
}

TEST(KerasWeightsErrors, WeightCountMismatch) {
  Model m = convnet({.branch_a_bias = false});
  for (const char* name : {"convnet.weights.h5", "convnet.h5"})
    expect_load_fails(m, keras_weights_fixture(name),
                      {"layer 'branch_a' (Conv2D) has 2 weights in the file", "the model's layer has 1 (kernel)"},
                      true);
}

TEST(KerasWeightsErrors, ShapeMismatch) {
  // logits is the last layer: every other layer's weights were read and checked before the mismatch.
  Model m = convnet({.logits_units = 7});
  for (const char* name : {"convnet.weights.h5", "convnet.h5"})
    expect_load_fails(m, keras_weights_fixture(name),
                      {"layer 'logits', weight 0 'kernel'", "the file has shape (6, 5)", "the model has (6, 7)"},
                      true);
}

}  // namespace
}  // namespace tower
