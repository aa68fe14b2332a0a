// Tower's own weight and model files (api/models/model_files.cpp): Model::save / Model::load and
// save_weights / load_weights, for graphs whose layers are shared or made in another order than Keras lists them.
#include <unistd.h>

#include <filesystem>

#include "api/io/weights_file.h"
#include "api/models/model.h"
#include "testing/errors.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using layers::Dense;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("tower_model_files_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void randomize_weights(const Model& m, std::uint64_t seed) {
  for (const VariablePtr& v : m.weights()) v->value.copy_from(testing::random_tensor(v->value.shape(), ++seed));
}

std::vector<std::string> weight_paths(const Model& m) {
  std::vector<std::string> out;
  for (const VariablePtr& v : m.weights()) out.push_back(v->path);
  return out;
}

// a1 = A(in); b = B(a1); a2 = A(b); c = C(a2); d = D(a1); out = Concatenate({c, d}). C and D have one shape,
// so weights swapped between them load without an error.
Model shared_layer_model() {
  auto in = Input({4}, "in");
  Dense a({.units = 4, .name = "A"});
  auto a1 = a(in);
  auto a2 = a(Dense({.units = 4, .name = "B"})(a1));
  auto c = Dense({.units = 3, .name = "C"})(a2);
  auto d = Dense({.units = 3, .name = "D"})(a1);
  return Model(in, layers::Concatenate({.name = "cat"})({c, d}), "shared");
}

TEST(ModelFiles, SaveAndLoadKeepTheWeightsOfASharedLayerModel) {
  Model m = shared_layer_model();
  randomize_weights(m, 7);
  const fs::path p = temp_dir() / "shared.tower";
  m.save(p);
  Model back = Model::load(p);
  EXPECT_EQ(weight_paths(back), weight_paths(m));
  EXPECT_EQ(weight_paths(back), (std::vector<std::string>{"A/kernel", "A/bias", "B/kernel", "B/bias", "C/kernel",
                                                          "C/bias", "D/kernel", "D/bias"}));
  const Tensor x = testing::random_tensor({5, 4}, 3);
  testing::expect_near(back.predict(x), m.predict(x), 0.f, 0.f, "predictions after Model::load");
}

TEST(ModelFiles, AMissingModelFileIsCalledAModelFile) {
  const std::string path = (temp_dir() / "missing.tower").string();
  const std::string message = testing::error_of([&] { Model::load(path); });
  EXPECT_EQ(message.rfind("model file '" + path + "': cannot open", 0), 0u) << message;
}

TEST(ModelFiles, WeightsAreMatchedByPathWhenTheFileNamesEveryWeight) {
  // A file listing the same weights in another order (a file written before Tower followed Keras' layer
  // order): every weight goes to the weight of its path.
  Model m = shared_layer_model();
  randomize_weights(m, 11);
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : m.weights()) named.push_back({v->path, v->value.clone()});
  std::swap(named[4], named[6]);  // C/kernel <-> D/kernel
  std::swap(named[5], named[7]);  // C/bias <-> D/bias
  const fs::path p = temp_dir() / "reordered.weights";
  io::write_weights_file(p.string(), named);
  Model back = shared_layer_model();
  back.load_weights(p);
  const Tensor x = testing::random_tensor({5, 4}, 4);
  testing::expect_near(back.predict(x), m.predict(x), 0.f, 0.f, "predictions after load_weights");
}

}  // namespace
}  // namespace tower
