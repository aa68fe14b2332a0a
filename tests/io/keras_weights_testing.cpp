#include "io/keras_weights_testing.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api/io/hdf5_file.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower::testing {

namespace fs = std::filesystem;

std::string keras_weights_fixture(const std::string& name) {
  return (reference_dir() / "keras_weights" / name).string();
}

KerasOutputsFixture read_keras_outputs(const std::string& name) {
  const Config doc = read_json_fixture("keras_weights/" + name + ".json");
  KerasOutputsFixture f;
  for (const Config& l : doc.at("layers").as_list()) f.layers.push_back(l.as_string());
  f.inputs = fixture_tensor(doc.at("inputs"));
  f.outputs = fixture_tensor(doc.at("outputs"));
  if (doc.contains("nested_layers"))
    for (const auto& [model, names] : doc.at("nested_layers").as_map())
      for (const Config& l : names.as_list()) f.nested_layers[model].push_back(l.as_string());
  return f;
}

void randomize_weights(const Model& model, std::uint64_t seed, bool all_weights) {
  for (const VariablePtr& v : model.weights()) {
    ++seed;
    if (v->name == "gamma" || v->name == "moving_variance")
      v->value.copy_from(random_tensor(v->value.shape(), seed, 0.5f, 1.5f));
    else if (v->name == "beta" || v->name == "moving_mean")
      v->value.copy_from(random_tensor(v->value.shape(), seed, -0.2f, 0.2f));
    else if (all_weights)
      v->value.copy_from(random_tensor(v->value.shape(), seed, -0.5f, 0.5f));
  }
}

std::string keras_check_dir() {
  if (const char* dir = std::getenv("TOWER_KERAS_CHECK_DIR"); dir && *dir) {
    fs::create_directories(dir);
    return dir;
  }
  const fs::path d = fs::temp_directory_path() / ("tower_keras_check_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
}

namespace {
void collect_weight_groups(const io::Hdf5Group& g, std::map<std::string, std::string>& out) {
  std::string shapes;
  for (int i = 0; g.has_dataset(std::to_string(i)); ++i) shapes += " " + g.dataset_shape(std::to_string(i)).to_string();
  if (!shapes.empty()) out[g.path()] = (g.has_attribute("name") ? g.string_attribute("name") : "?") + shapes;
  for (const std::string& c : g.children())
    if (g.has_group(c)) collect_weight_groups(g.group(c), out);
}
}  // namespace

std::map<std::string, std::string> keras3_weight_groups(const std::string& file) {
  std::map<std::string, std::string> out;
  collect_weight_groups(io::Hdf5File::open(file), out);
  return out;
}

namespace {
Config tensor_json(const Tensor& t) {
  Config c = Config::map();
  Config shape = Config::list();
  for (Index d : t.shape()) shape.push_back(d);
  c.set("shape", shape);
  Config data = Config::list();
  for (float v : t.to_vector()) data.push_back(static_cast<double>(v));
  c.set("data", data);
  return c;
}
}  // namespace

void write_files_for_keras(const Model& model, const std::string& dir, const std::string& name, const Tensor& inputs,
                           const Tensor& outputs) {
  model.save_weights((fs::path(dir) / ("tower_" + name + ".weights.h5")).string());
  Config doc = Config::map();
  doc.set("inputs", tensor_json(inputs));
  doc.set("outputs", tensor_json(outputs));
  std::ofstream((fs::path(dir) / ("tower_" + name + ".json")).string()) << doc.to_json() << "\n";
}

}  // namespace tower::testing
