// Layers against Keras itself: every tests/reference/layers/<case>.json, written by make_layer_fixtures.py
// (Keras 3 on TensorFlow), holds a layer config, inputs, weights, the outputs Keras computed and the gradients
// of L = sum(output * R) for a given R ("upstream"). Each file is one test, KerasLayers.Matches/<case>:
//
//   parse -> layer_from_config -> Model(Input(...), layer(...)) -> Plan(batch, training, backward,
//   input_gradients) -> copy the fixture weights in by name -> forward, compare outputs -> write R into
//   output_grad -> backward, compare input and weight gradients -> (BatchNormalization training) compare the
//   moving statistics after the step.
//
// Tolerances: outputs |got - want| <= 1e-5 + 1e-4 |want|; gradients |got - want| <= 1e-4 + 1e-3 |want|.
// Both sides are float32 but sum in different orders (oneDNN/Eigen in TensorFlow, Tower's own kernels), and
// gradients go through one more reduction than outputs, hence the looser gradient bound.
//
// An unknown layer type, a missing field, a missing or extra weight, or any shape mismatch fails the test with
// a message naming the file; nothing is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tower/tower.h"

#ifndef TOWER_TEST_DATA_DIR
#error "TOWER_TEST_DATA_DIR must be defined (the absolute path of tests/reference)"
#endif

namespace tower {
namespace {

namespace fs = std::filesystem;

constexpr double kOutputAtol = 1e-5, kOutputRtol = 1e-4;
constexpr double kGradAtol = 1e-4, kGradRtol = 1e-3;

fs::path fixture_dir() { return fs::path(TOWER_TEST_DATA_DIR) / "layers"; }

std::vector<std::string> fixture_files() {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(fixture_dir(), ec)) return files;
  for (const auto& entry : fs::directory_iterator(fixture_dir(), ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The case name ("Conv2D_same") as a gtest name: letters, digits and underscores only.
std::string case_name(const std::string& file) {
  std::string s = fs::path(file).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

// Any failure to read a fixture throws this; the test reports it with the file name.
struct FixtureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const Config& field(const Config& c, const std::string& key, const std::string& where) {
  if (!c.is_map() || !c.contains(key)) throw FixtureError(where + ": missing field '" + key + "'");
  return c.at(key);
}

Shape read_shape(const Config& c, const std::string& where) {
  std::vector<Index> dims;
  for (const Config& d : field(c, "shape", where).as_list()) dims.push_back(static_cast<Index>(d.as_int()));
  return Shape(dims);
}

struct NamedTensor {
  std::string name;  // empty for inputs, outputs and their gradients
  Tensor value;
};

NamedTensor read_tensor(const Config& c, const std::string& where, bool named) {
  NamedTensor t;
  if (named) t.name = field(c, "name", where).as_string();
  const std::string w = named ? where + " '" + t.name + "'" : where;
  const Shape shape = read_shape(c, w);
  std::vector<float> data;
  for (const Config& v : field(c, "data", w).as_list()) data.push_back(static_cast<float>(v.as_double()));
  if (static_cast<Index>(data.size()) != shape.numel())
    throw FixtureError(w + ": " + std::to_string(data.size()) + " values for shape " + shape.to_string());
  t.value = Tensor::from_vector(data, shape);
  return t;
}

std::vector<NamedTensor> read_tensors(const Config& doc, const std::string& key, bool named) {
  std::vector<NamedTensor> out;
  const Config& list = field(doc, key, "fixture");
  if (!list.is_list()) throw FixtureError("field '" + key + "': expected a list, got " + list.type_name());
  for (std::size_t i = 0; i < list.as_list().size(); ++i)
    out.push_back(read_tensor(list.as_list()[i], key + "[" + std::to_string(i) + "]", named));
  return out;
}

// Element-wise |got - want| <= atol + rtol |want|; reports the first mismatches and the largest error.
void compare(const std::string& what, const Tensor& got, const Tensor& want, double atol, double rtol) {
  ASSERT_EQ(got.shape(), want.shape()) << what << ": shape " << got.shape().to_string() << ", Keras has "
                                       << want.shape().to_string();
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  int bad = 0;
  double max_err = 0;
  std::size_t max_at = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(static_cast<double>(g[i]) - w[i]);
    if (!(err <= atol + rtol * std::fabs(w[i]))) {  // NaN fails too
      if (bad < 6) first << "\n    [" << i << "] got " << g[i] << ", Keras " << w[i];
      ++bad;
    }
    if (!(err <= max_err)) {
      max_err = err;
      max_at = i;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size() << " elements differ (atol " << atol << ", rtol "
                    << rtol << "; largest error " << max_err << " at [" << max_at << "])" << first.str();
}

const NamedTensor* find_named(const std::vector<NamedTensor>& list, const std::string& name) {
  for (const NamedTensor& t : list)
    if (t.name == name) return &t;
  return nullptr;
}

// A fixture names a weight as Tower names it ("kernel", MultiHeadAttention's "query/kernel"), or, for a wrapper of
// several layers (Bidirectional), by its path ("forward_lstm/kernel").
bool same_weight(const VariablePtr& v, const std::string& name) { return v->name == name || v->path == name; }

const NamedTensor* find_weight(const std::vector<NamedTensor>& list, const VariablePtr& v) {
  for (const NamedTensor& t : list)
    if (same_weight(v, t.name)) return &t;
  return nullptr;
}

std::string names_of(const std::vector<VariablePtr>& vars) {
  std::string s;
  for (const auto& v : vars) s += (s.empty() ? "" : ", ") + v->name;
  return "[" + s + "]";
}

std::string names_of(const std::vector<NamedTensor>& list) {
  std::string s;
  for (const auto& t : list) s += (s.empty() ? "" : ", ") + t.name;
  return "[" + s + "]";
}

void run_case(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw FixtureError("cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  const Config doc = Config::parse_json(ss.str());

  const Config& layer_doc = field(doc, "layer", "fixture");
  Config serialized = Config::map();
  serialized.set("class_name", field(layer_doc, "class_name", "layer"));
  serialized.set("config", field(layer_doc, "config", "layer"));
  const bool training = field(doc, "training", "fixture").as_bool();
  const std::vector<NamedTensor> inputs = read_tensors(doc, "inputs", false);
  const std::vector<NamedTensor> weights = read_tensors(doc, "weights", true);
  const std::vector<NamedTensor> upstream = read_tensors(doc, "upstream", false);
  const std::vector<NamedTensor> outputs = read_tensors(doc, "outputs", false);
  const std::vector<NamedTensor> input_grads = read_tensors(doc, "input_grads", false);
  const std::vector<NamedTensor> weight_grads = read_tensors(doc, "weight_grads", true);
  std::vector<NamedTensor> weights_after;
  if (doc.contains("weights_after")) weights_after = read_tensors(doc, "weights_after", true);
  if (inputs.empty()) throw FixtureError("no inputs");
  if (upstream.size() != outputs.size())
    throw FixtureError(std::to_string(upstream.size()) + " upstream tensors for " + std::to_string(outputs.size()) +
                       " outputs");
  if (input_grads.size() != inputs.size())
    throw FixtureError(std::to_string(input_grads.size()) + " input_grads for " + std::to_string(inputs.size()) +
                       " inputs");
  SCOPED_TRACE("layer " + serialized.to_json() + (training ? ", training" : ", inference"));

  // The layer, in a one-layer model.
  LayerPtr layer = layer_from_config(serialized);
  std::vector<SymbolicTensor> sym;
  for (const NamedTensor& x : inputs) sym.push_back(Input(x.value.shape().without_batch()));
  std::vector<SymbolicTensor> sym_out = (*layer)(sym);
  Model model(sym, sym_out);

  // Weights: the same names and shapes as Keras', none missing, none extra.
  const std::vector<VariablePtr> layer_weights = layer->weights();
  for (const VariablePtr& v : layer_weights)
    if (!find_weight(weights, v))
      ADD_FAILURE() << "Tower weight '" << v->name << "' " << v->value.shape().to_string()
                    << " is not among Keras' weights " << names_of(weights);
  for (const NamedTensor& w : weights) {
    auto it = std::find_if(layer_weights.begin(), layer_weights.end(), [&](const VariablePtr& v) { return same_weight(v, w.name); });
    if (it == layer_weights.end()) {
      ADD_FAILURE() << "Keras weight '" << w.name << "' " << w.value.shape().to_string()
                    << " is missing in Tower's layer, which has " << names_of(layer_weights);
      continue;
    }
    if ((*it)->value.shape() != w.value.shape()) {
      ADD_FAILURE() << "weight '" << w.name << "': Tower shape " << (*it)->value.shape().to_string() << ", Keras "
                    << w.value.shape().to_string();
      continue;
    }
    (*it)->value.copy_from(w.value);
  }
  if (::testing::Test::HasFailure()) return;

  PlanOptions po;
  po.batch_size = inputs[0].value.dim(0);
  po.training = training;
  po.backward = true;
  po.input_gradients = true;
  po.seed = 42;
  Plan plan(model.impl(), po);
  ASSERT_EQ(plan.num_inputs(), static_cast<int>(inputs.size()));
  ASSERT_EQ(plan.num_outputs(), static_cast<int>(outputs.size())) << "number of outputs";
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(inputs[i].value.clone());
    plan.set_input(static_cast<int>(i), xs.back());
  }

  plan.forward();
  for (std::size_t i = 0; i < outputs.size(); ++i)
    compare("output " + std::to_string(i), plan.output(static_cast<int>(i)), outputs[i].value, kOutputAtol,
            kOutputRtol);

  for (std::size_t i = 0; i < upstream.size(); ++i) {
    Tensor& g = plan.output_grad(static_cast<int>(i));
    ASSERT_EQ(g.shape(), upstream[i].value.shape()) << "upstream " << i << ": output_grad shape";
    g.copy_from(upstream[i].value);
  }
  plan.backward();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    compare("input gradient " + std::to_string(i), plan.input_grad(static_cast<int>(i)), input_grads[i].value,
            kGradAtol, kGradRtol);

  // Weight gradients, matched by name: plan.trainable_weights() order need not be Keras' order.
  const std::vector<VariablePtr>& trainable = plan.trainable_weights();
  EXPECT_EQ(trainable.size(), weight_grads.size())
      << "trainable weights: Tower " << names_of(trainable) << ", Keras " << names_of(weight_grads);
  for (std::size_t k = 0; k < trainable.size(); ++k)
    if (!find_weight(weight_grads, trainable[k]))
      ADD_FAILURE() << "Tower trainable weight '" << trainable[k]->name << "' is not trainable in Keras "
                    << names_of(weight_grads);
  for (const NamedTensor& wg : weight_grads) {
    std::size_t k = 0;
    while (k < trainable.size() && !same_weight(trainable[k], wg.name)) ++k;
    if (k == trainable.size()) {
      ADD_FAILURE() << "Keras trainable weight '" << wg.name << "' is not trainable in Tower "
                    << names_of(trainable);
      continue;
    }
    compare("gradient of weight '" + wg.name + "'", plan.weight_grads()[k], wg.value, kGradAtol, kGradRtol);
  }

  // BatchNormalization in training: the moving statistics after one step.
  for (const NamedTensor& w : weights_after) {
    auto it = std::find_if(layer_weights.begin(), layer_weights.end(), [&](const VariablePtr& v) { return same_weight(v, w.name); });
    if (it == layer_weights.end()) {
      ADD_FAILURE() << "weights_after: Keras weight '" << w.name << "' is missing in Tower's layer";
      continue;
    }
    compare("weight '" + w.name + "' after the step", (*it)->value, w.value, kOutputAtol, kOutputRtol);
  }
}

class KerasLayers : public ::testing::TestWithParam<std::string> {};

TEST_P(KerasLayers, Matches) {
  const std::string& file = GetParam();
  SCOPED_TRACE("fixture " + file);
  try {
    run_case(file);
  } catch (const std::exception& e) {
    FAIL() << file << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(, KerasLayers, ::testing::ValuesIn(fixture_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return case_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KerasLayers);

// The fixtures must be there: an empty or missing directory must not pass silently.
TEST(KerasLayersFixtures, ArePresent) {
  EXPECT_FALSE(fixture_files().empty()) << "no *.json fixtures in " << fixture_dir().string()
                                        << " (run tests/reference/make_layer_fixtures.py)";
}

}  // namespace
}  // namespace tower
