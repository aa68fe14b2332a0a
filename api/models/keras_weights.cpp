#include "api/models/keras_weights.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "api/io/hdf5_file.h"
#include "api/io/hdf5_writer.h"
#include "api/io/weights_file.h"
#include "api/models/model.h"

namespace tower::io {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string prefix(const std::string& path) { return "Keras weights file '" + path + "': "; }

// The legacy format's order: layer.trainable_weights + layer.non_trainable_weights.
std::vector<VariablePtr> legacy_order(const Layer& layer) {
  std::vector<VariablePtr> out = layer.trainable_weights();
  for (const VariablePtr& v : layer.non_trainable_weights()) out.push_back(v);
  return out;
}

// Keras' _get_unique_name: "conv2d", then "conv2d_1", "conv2d_2", ...
std::string unique_group_name(const std::string& type, std::map<std::string, int>& used) {
  const std::string base = to_snake_case(type);
  const int n = used[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

const ModelImpl* as_model(const LayerPtr& layer) { return dynamic_cast<const ModelImpl*>(layer.get()); }

std::string layer_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// Weights read and checked, assigned only once the whole file has been checked.
using Staged = std::vector<std::pair<VariablePtr, Tensor>>;

void stage(const std::string& path, const Layer& layer, const std::vector<VariablePtr>& vars, const Hdf5Group& group,
           const std::vector<std::string>& datasets, Staged& staged) {
  if (datasets.size() != vars.size()) {
    std::string names;
    for (const VariablePtr& v : vars) names += (names.empty() ? "" : ", ") + v->name;
    throw std::invalid_argument(prefix(path) + "layer '" + layer.name() + "' (" + layer.type() + ") has " +
                                std::to_string(datasets.size()) + " weights in the file ('" + group.path() +
                                "'), the model's layer has " + std::to_string(vars.size()) + " (" + names + ")");
  }
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const Shape shape = group.dataset_shape(datasets[i]);
    if (shape != vars[i]->value.shape())
      throw std::invalid_argument(prefix(path) + "layer '" + layer.name() + "', weight " + std::to_string(i) + " '" +
                                  vars[i]->name + "': the file has shape " + shape.to_string() + " ('" +
                                  group.path() + "/" + datasets[i] + "'), the model has " +
                                  vars[i]->value.shape().to_string());
    staged.emplace_back(vars[i], group.read_dataset(datasets[i]));
  }
}

// ---- Keras 3 ---------------------------------------------------------------------------------------------------

void write_keras3(const ModelImpl& model, Hdf5WriteGroup group) {
  group.create_group("vars").set_string_attribute("name", model.name());
  std::map<std::string, int> used;
  for (const LayerPtr& layer : model.layers()) {
    const std::string child = "layers/" + unique_group_name(layer->type(), used);
    if (const ModelImpl* nested = as_model(layer)) {
      write_keras3(*nested, group.create_group(child));
      continue;
    }
    for (const KerasWeightGroup& g : layer->keras_weight_groups()) {
      Hdf5WriteGroup vars = group.create_group(child + (g.path.empty() ? "" : "/" + g.path) + "/vars");
      vars.set_string_attribute("name", g.name);
      for (std::size_t i = 0; i < g.variables.size(); ++i) vars.write_dataset(std::to_string(i), g.variables[i]->value);
    }
  }
}

// Keras' _load_container_state: each layer is read from the group its class and place in model.layers name, so a
// file loads into any model of that structure, whatever its layers are called (the "name" attributes are not read).
void read_keras3(const std::string& path, const ModelImpl& model, const Hdf5Group& group, Staged& staged) {
  if (!group.has_group("layers"))
    throw std::runtime_error(prefix(path) + "no group '" + group.path() +
                             (group.path() == "/" ? "" : "/") + "layers': not a Keras .weights.h5 file");
  const Hdf5Group layers = group.group("layers");
  std::map<std::string, int> used;
  for (const LayerPtr& layer : model.layers()) {
    const std::string child = unique_group_name(layer->type(), used);
    const ModelImpl* nested = as_model(layer);
    const std::vector<KerasWeightGroup> groups = layer->keras_weight_groups();
    if (std::none_of(groups.begin(), groups.end(), [](const KerasWeightGroup& g) { return !g.variables.empty(); }))
      continue;
    if (!layers.has_group(child))
      throw std::invalid_argument(prefix(path) + "layer '" + layer->name() + "' (" + layer->type() +
                                  ") is not in the file (no group '" + layers.path() + "/" + child +
                                  "', the group of its class and place in the model's layers); the groups there are: " +
                                  layer_list(layers.children()));
    if (nested) {
      read_keras3(path, *nested, layers.group(child), staged);
      continue;
    }
    const Hdf5Group layer_group = layers.group(child);
    for (const KerasWeightGroup& group : groups) {
      if (group.variables.empty()) continue;
      Hdf5Group owner = layer_group;
      if (!group.path.empty()) {
        if (!layer_group.has_group(group.path))
          throw std::invalid_argument(prefix(path) + "layer '" + layer->name() + "' (" + layer->type() +
                                      ") keeps weights in '" + layer_group.path() + "/" + group.path +
                                      "', which the file does not have; the groups there are: " +
                                      layer_list(layer_group.children()));
        owner = layer_group.group(group.path);
      }
      // A layer group without vars holds no weights; stage() reports the count mismatch.
      const Hdf5Group g = owner.has_group("vars") ? owner.group("vars") : owner;
      std::vector<std::string> datasets;
      for (std::size_t i = 0; g.has_dataset(std::to_string(i)); ++i) datasets.push_back(std::to_string(i));
      std::size_t all = 0;
      for (const std::string& c : g.children()) all += g.has_dataset(c) ? 1 : 0;
      if (all != datasets.size())
        throw std::runtime_error(prefix(path) + "'" + g.path() + "' holds datasets not named 0, 1, ...: " +
                                 layer_list(g.children()));
      stage(path, *layer, group.variables, g, datasets, staged);
    }
  }
}

// ---- legacy .h5 ------------------------------------------------------------------------------------------------

// Keras' load_attributes_from_hdf5_group: `name`, or the chunks name0, name1, ... of a long list.
bool read_chunked_list(const Hdf5Group& group, const std::string& name, std::vector<std::string>& out) {
  if (group.has_attribute(name)) {
    out = group.string_list_attribute(name);
    return true;
  }
  if (!group.has_attribute(name + "0")) return false;
  out.clear();
  for (int k = 0; group.has_attribute(name + std::to_string(k)); ++k)
    for (std::string& s : group.string_list_attribute(name + std::to_string(k))) out.push_back(std::move(s));
  return true;
}

// Keras names a nested model's weights by their paths ("inner_conv/kernel", Keras 2 "inner_conv/kernel:0"): the
// file's datasets in `vars`' order when each of `vars` is named once, else `weight_names` as they are.
std::vector<std::string> by_weight_path(const std::vector<VariablePtr>& vars, const std::vector<std::string>& weight_names) {
  if (weight_names.size() != vars.size()) return weight_names;
  std::map<std::string, std::string> dataset_of;
  for (const std::string& w : weight_names) {
    const bool tf_suffix = w.size() > 2 && w.compare(w.size() - 2, 2, ":0") == 0;
    dataset_of.emplace(tf_suffix ? w.substr(0, w.size() - 2) : w, w);
  }
  std::vector<std::string> out;
  for (const VariablePtr& v : vars) {
    const auto it = dataset_of.find(v->path);
    if (it == dataset_of.end()) return weight_names;
    out.push_back(it->second);
    dataset_of.erase(it);
  }
  return out;
}

// Keras' load_weights_from_hdf5_group: the model's layers with weights take the file's layers with weights by
// position, whatever either is called; so do a layer's weights.
void read_legacy(const std::string& path, const ModelImpl& model, const Hdf5File& file, Staged& staged) {
  Hdf5Group root = file;
  std::vector<std::string> layer_names;
  if (!read_chunked_list(root, "layer_names", layer_names)) {
    if (!root.has_group("model_weights"))
      throw std::runtime_error(prefix(path) +
                               "no attribute 'layer_names' at the root or in 'model_weights': not a Keras .h5 "
                               "weights file");
    root = root.group("model_weights");
    if (!read_chunked_list(root, "layer_names", layer_names))
      throw std::runtime_error(prefix(path) + "no attribute 'layer_names' in '/model_weights': not a Keras .h5 "
                                              "weights file");
  }
  std::vector<LayerPtr> model_layers;
  std::vector<std::string> model_names;
  for (const LayerPtr& layer : model.layers())
    if (!legacy_order(*layer).empty()) {
      model_layers.push_back(layer);
      model_names.push_back(layer->name());
    }
  std::vector<std::string> file_layers;
  std::vector<std::vector<std::string>> file_weights;
  for (const std::string& name : layer_names) {
    if (!root.has_group(name))
      throw std::runtime_error(prefix(path) + "layer_names of '" + root.path() + "' lists '" + name +
                               "', which is not a group there");
    const Hdf5Group g = root.group(name);
    std::vector<std::string> weight_names;
    read_chunked_list(g, "weight_names", weight_names);  // none: a layer without weights, as Keras reads it
    if (weight_names.empty()) continue;
    for (const std::string& w : weight_names)
      if (!g.has_dataset(w))
        throw std::runtime_error(prefix(path) + "weight_names of '" + g.path() + "' lists '" + w +
                                 "', which is not a dataset there");
    file_layers.push_back(name);
    file_weights.push_back(std::move(weight_names));
  }
  if (file_layers.size() != model_layers.size())
    throw std::invalid_argument(prefix(path) + "layer count mismatch: the model has " +
                                std::to_string(model_layers.size()) + " layers with weights (" +
                                layer_list(model_names) + "), the file " + std::to_string(file_layers.size()) +
                                " (" + layer_list(file_layers) + ")");
  for (std::size_t k = 0; k < model_layers.size(); ++k) {
    const LayerPtr& layer = model_layers[k];
    const std::vector<VariablePtr> vars = legacy_order(*layer);
    const std::vector<std::string> datasets = as_model(layer) ? by_weight_path(vars, file_weights[k]) : file_weights[k];
    stage(path, *layer, vars, root.group(file_layers[k]), datasets, staged);
  }
}

}  // namespace

KerasWeightsFormat keras_weights_format(const std::string& path) {
  if (ends_with(path, ".weights.h5")) return KerasWeightsFormat::keras3;
  if (ends_with(path, ".h5") || ends_with(path, ".hdf5")) return KerasWeightsFormat::legacy;
  return KerasWeightsFormat::none;
}

void save_keras_weights(const ModelImpl& model, const std::string& path) {
  if (keras_weights_format(path) != KerasWeightsFormat::keras3)
    throw std::invalid_argument(prefix(path) + "Keras weights are written as Keras 3 .weights.h5 files only; "
                                               "use a path ending in '.weights.h5'");
  Hdf5Writer file(path);
  write_keras3(model, file);
  write_file_atomically(path, file.image());
}

void load_keras_weights(ModelImpl& model, const std::string& path) {
  const KerasWeightsFormat format = keras_weights_format(path);
  if (format == KerasWeightsFormat::none)
    throw std::invalid_argument(prefix(path) + "not a Keras weights file name (expected '.weights.h5', '.h5' or "
                                               "'.hdf5')");
  const Hdf5File file = Hdf5File::open(path);
  Staged staged;
  if (format == KerasWeightsFormat::keras3)
    read_keras3(path, model, file, staged);
  else
    read_legacy(path, model, file, staged);
  for (auto& [var, value] : staged) var->value.copy_from(value);
}

}  // namespace tower::io
