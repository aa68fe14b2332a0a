// MirroredStrategy against tf.distribute.MirroredStrategy itself. tests/reference/distribute/<config>.json,
// written by tests/reference/make_distribute_fixtures.py (TensorFlow 2.21, Keras 3, two virtual CPU devices),
// holds a small convnet with BatchNormalization, its initial weights, 12 global batches (two short ones, which
// TensorFlow split 3 + 2 and 2 + 1), the replica sizes TensorFlow used, the loss of every step of its custom
// training loop (each replica's loss sum over the global batch size, gradients summed, one Adam update), and the
// weights after step 1 and at the end:
//
//   bn      BatchNormalization with per-replica statistics; the moving statistics Keras reports are the first
//           replica's (its MirroredVariables have aggregation "none"), which is what Tower keeps
//   syncbn  BatchNormalization(synchronized=True): the global batch's statistics
//
// TfMirroredStrategy.Matches/<config> builds the same model with Tower's API (each layer's get_config() equal
// to the one Tower makes from the fixture's Keras kwargs), sets the same initial weights, and runs the same
// batches through train_on_batch on MirroredStrategy({"cpu:0", "cpu:1"}):
//   split    each batch's rows per replica equal TensorFlow's;
//   losses   |tower - tf| <= 1e-4 |tf| at every step;
//   weights  after step 1 and after step 12, every weight (moving statistics included): the relative difference
//            max |tower - tf| / max |tf| <= 1e-4 (the bound), and elementwise within 1e-5 + 1e-3 |tf|.
// A missing file, field or weight fails the test; nothing is skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "distribute/replica_testing.h"
#include "testing/fixtures.h"
#include "tower/tower.h"

namespace tower {
namespace {

constexpr double kRelative = 1e-4;
constexpr double kAtol = 1e-5, kRtol = 1e-3;

struct Named {
  std::string name;
  Tensor value;
};

std::vector<Named> read_named(const Config& doc, const std::string& key) {
  std::vector<Named> out;
  for (const Config& c : doc.at(key).as_list()) out.push_back({c.at("name").as_string(), testing::fixture_tensor(c)});
  return out;
}

Model build_model(bool synchronized) {
  SymbolicTensor in = Input({8, 8, 2});
  SymbolicTensor h = layers::Conv2D({.filters = 6, .kernel_size = 3, .padding = "same", .use_bias = false,
                                     .name = "conv1"})(in);
  h = layers::BatchNormalization({.momentum = 0.99, .epsilon = 1e-3, .synchronized = synchronized, .name = "bn1"})(h);
  h = layers::ReLU({.name = "relu1"})(h);
  h = layers::MaxPooling2D({.pool_size = 2, .name = "pool"})(h);
  h = layers::Conv2D({.filters = 8, .kernel_size = 3, .use_bias = false, .name = "conv2"})(h);
  h = layers::BatchNormalization({.momentum = 0.99, .epsilon = 1e-3, .synchronized = synchronized, .name = "bn2"})(h);
  h = layers::ReLU({.name = "relu2"})(h);
  h = layers::GlobalAveragePooling2D({.name = "gap"})(h);
  return Model(in, layers::Dense({.units = 4, .activation = "softmax", .name = "dense"})(h));
}

void check_architecture(const Config& doc, const Model& model) {
  std::vector<LayerPtr> layers;
  for (const LayerPtr& l : model.layers())
    if (l->type() != "InputLayer") layers.push_back(l);
  const Config::List& want = doc.at("layers").as_list();
  ASSERT_EQ(layers.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    Config serialized = Config::map();
    serialized.set("class_name", want[i].at("class_name"));
    serialized.set("config", want[i].at("config"));
    EXPECT_EQ(layers[i]->get_config().to_json(), layer_from_config(serialized)->get_config().to_json())
        << "layer " << i << " differs from the fixture's " << serialized.to_json();
  }
}

void compare_weights(const std::string& when, const std::vector<VariablePtr>& vars, const std::vector<Named>& want) {
  ASSERT_EQ(vars.size(), want.size()) << when;
  std::ostringstream table;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    ASSERT_EQ(vars[i]->path, want[i].name) << when << ": weight " << i;
    const double rel = testing::relative_difference(vars[i]->value, want[i].value);
    EXPECT_LE(rel, kRelative) << when << ": weight " << want[i].name;
    const std::vector<float> g = vars[i]->value.to_vector(), w = want[i].value.to_vector();
    int bad = 0;
    for (std::size_t k = 0; k < g.size(); ++k) bad += !(std::fabs(g[k] - w[k]) <= kAtol + kRtol * std::fabs(w[k]));
    EXPECT_EQ(bad, 0) << when << ": weight " << want[i].name << ", elements beyond 1e-5 + 1e-3 |tf|";
    table << "    " << want[i].name << ": relative difference " << rel << "\n";
  }
  std::cout << "[ TfMirroredStrategy ] weights " << when << "\n" << table.str();
}

class TfMirroredStrategy : public ::testing::TestWithParam<std::string> {};

TEST_P(TfMirroredStrategy, Matches) {
  const std::string config = GetParam();
  try {
    const Config doc = testing::read_json_fixture("distribute/" + config + ".json");
    ASSERT_EQ(doc.at("config").as_string(), config);
    ASSERT_EQ(doc.at("replicas").as_int(), 2);
    distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
    Model model = [&] {
      auto scope = strategy.scope();
      Model m = build_model(config == "syncbn");
      m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
      return m;
    }();
    check_architecture(doc, model);
    const std::vector<Named> initial = read_named(doc, "weights");
    const std::vector<VariablePtr> vars = model.weights();
    ASSERT_EQ(vars.size(), initial.size());
    std::vector<Tensor> values;
    for (std::size_t i = 0; i < vars.size(); ++i) {
      ASSERT_EQ(vars[i]->path, initial[i].name);
      values.push_back(initial[i].value);
    }
    model.set_weights(values);

    const double x_scale = doc.at("x_scale").as_double();
    std::vector<double> losses;
    for (const Config& v : doc.at("losses").as_list()) losses.push_back(v.as_double());
    const Config::List& batches = doc.at("batches").as_list();
    ASSERT_EQ(batches.size(), losses.size());
    ASSERT_EQ(batches.size(), 12u);
    detail::Replicas* replicas = model->replicas();
    ASSERT_NE(replicas, nullptr);
    double worst = 0;
    std::ostringstream table;
    for (std::size_t s = 0; s < batches.size(); ++s) {
      const Config& b = batches[s];
      const Tensor xi = testing::fixture_tensor(b.at("x"));
      std::vector<float> x = xi.to_vector();
      for (float& v : x) v = static_cast<float>(v * x_scale);
      std::vector<std::int32_t> y;
      for (const Config& v : b.at("y").as_list()) y.push_back(static_cast<std::int32_t>(v.as_int()));
      const Index n = static_cast<Index>(y.size());
      for (int r = 0; r < 2; ++r) {
        const auto [begin, end] = replicas->slice(n, r);
        EXPECT_EQ(end - begin, b.at("replica_sizes").as_list().at(static_cast<std::size_t>(r)).as_int())
            << "step " << s + 1 << " replica " << r;
      }
      const callbacks::Logs logs =
          model.train_on_batch(Tensor::from_vector(x, xi.shape()), Tensor::from_vector(y, Shape{n}));
      const double got = *logs.get("loss"), want = losses[s];
      const double rel = std::fabs(got - want) / std::fabs(want);
      worst = std::max(worst, rel);
      EXPECT_LE(rel, kRelative) << "step " << s + 1 << ": Tower " << got << ", TensorFlow " << want;
      char line[160];
      std::snprintf(line, sizeof line, "  step %2zu (%lld rows)  Tower %.8f  TensorFlow %.8f  rel. diff %.2e\n", s + 1,
                    static_cast<long long>(n), got, want, rel);
      table << line;
      if (s == 0) compare_weights("after step 1", model.weights(), read_named(doc, "weights_after_step1"));
    }
    std::cout << "[ TfMirroredStrategy ] " << config << ": per-step loss, largest relative difference " << worst
              << "\n" << table.str();
    compare_weights("after step 12", model.weights(), read_named(doc, "weights_final"));
  } catch (const std::exception& e) {
    FAIL() << config << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(, TfMirroredStrategy, ::testing::Values("bn", "syncbn"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tower
