// MobileNetV2 against Keras (Tower issue #4, part 4): keras.applications.MobileNetV2(alpha=0.35,
// input_shape=(96, 96, 3), include_top=False, pooling="avg", weights=None) with random weights, saved by Keras
// as .weights.h5 and in the legacy .h5 layout (tests/reference/make_keras_weights_fixtures.py). Tower's
// applications::MobileNetV2 with the same options loads both and must reproduce Keras' pooled features;
// a Tower-saved .weights.h5 must have the groups Keras loads by (and the script's --check-tower loads it
// into Keras, see there).
#include "applications/mobilenet_v2.h"

#include <unistd.h>

#include <filesystem>

#include "io/keras_weights_testing.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using testing::keras_weights_fixture;

Model keras_fixture_model() {
  applications::MobileNetV2Options o;
  o.input_shape = {96, 96, 3};
  o.alpha = 0.35;
  o.include_top = false;
  o.weights = "";
  o.pooling = "avg";
  return applications::MobileNetV2(o);
}

void expect_loads_like_keras(const std::string& file) {
  SCOPED_TRACE(file);
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("mobilenet_v2");
  Model m = keras_fixture_model();
  m.load_weights(file);
  const Tensor y = m.predict(f.inputs);
  ASSERT_EQ(y.shape(), f.outputs.shape());
  testing::expect_near(y, f.outputs, testing::kKerasAtol, testing::kKerasRtol, "MobileNetV2 pooled features");
}

TEST(MobileNetV2Keras, HasKerasLayersInKerasOrder) {
  // The input and pooling layers are named automatically ("input_layer", "global_average_pooling2d"); the
  // fixture script made its model right after keras.utils.clear_session().
  clear_session();
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("mobilenet_v2");
  std::vector<std::string> names;
  for (const LayerPtr& l : keras_fixture_model().layers()) names.push_back(l->name());
  EXPECT_EQ(names, f.layers);
}

TEST(MobileNetV2Keras, LoadsKeras3WeightsH5) {
  expect_loads_like_keras(keras_weights_fixture("mobilenet_v2.weights.h5"));
}

TEST(MobileNetV2Keras, LoadsLegacyH5) { expect_loads_like_keras(keras_weights_fixture("mobilenet_v2.h5")); }

TEST(MobileNetV2Keras, WritesTheGroupsKerasLoads) {
  const fs::path p = fs::temp_directory_path() / ("tower_mnv2_" + std::to_string(::getpid()) + ".weights.h5");
  keras_fixture_model().save_weights(p.string());
  EXPECT_EQ(testing::keras3_weight_groups(p.string()),
            testing::keras3_weight_groups(keras_weights_fixture("mobilenet_v2.weights.h5")));
  fs::remove(p);
}

TEST(MobileNetV2Keras, WritesFilesForKeras) {
  // With TOWER_KERAS_CHECK_DIR set, make_keras_weights_fixtures.py --check-tower then loads this file into
  // Keras' MobileNetV2 and compares Keras' outputs with Tower's.
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("mobilenet_v2");
  Model m = keras_fixture_model();
  testing::randomize_weights(m, 4242, false);
  const Tensor y = m.predict(f.inputs);
  const std::string dir = testing::keras_check_dir();
  testing::write_files_for_keras(m, dir, "mobilenet_v2", f.inputs, y);
  Model back = keras_fixture_model();
  back.load_weights((fs::path(dir) / "tower_mobilenet_v2.weights.h5").string());
  testing::expect_near(back.predict(f.inputs), y, 0.f, 0.f, "outputs after reloading Tower's file");
}

}  // namespace
}  // namespace tower

