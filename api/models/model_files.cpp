// ModelImpl and Model: weights, weight files, model files and model_from_config.
#include <unordered_map>
#include <unordered_set>

#include "api/core/allocator.h"
#include "api/engine/layer_registry.h"
#include "api/io/weights_file.h"
#include "api/models/keras_weights.h"
#include "api/models/model.h"

namespace tower {

std::vector<Tensor> ModelImpl::get_weights() const {
  std::vector<Tensor> out;
  for (const VariablePtr& v : weights()) out.push_back(v->value.clone());
  return out;
}

void ModelImpl::set_weights(const std::vector<Tensor>& values) {
  const detail::ModelUse::Guard use = use_.change();
  const std::vector<VariablePtr> ws = weights();
  if (values.size() != ws.size())
    throw std::invalid_argument("Model '" + name() + "': set_weights() got " + std::to_string(values.size()) +
                                " arrays for " + std::to_string(ws.size()) + " weights");
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (values[i].shape() != ws[i]->value.shape())
      throw std::invalid_argument("Model '" + name() + "': weight '" + ws[i]->path + "' has shape " +
                                  ws[i]->value.shape().to_string() + ", got " + values[i].shape().to_string());
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->value.copy_from(values[i]);
  weights_written();
}

void ModelImpl::save_weights(const std::string& path) const {
  if (io::keras_weights_format(path) != io::KerasWeightsFormat::none) return io::save_keras_weights(*this, path);
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : weights()) named.push_back({v->path, v->value});
  Config extra = Config::map();
  extra.set("model", name());
  io::write_weights_file(path, named, extra);
}

void ModelImpl::load_weights(const std::string& path) {
  const detail::ModelUse::Guard use = use_.change();
  if (io::keras_weights_format(path) != io::KerasWeightsFormat::none) {
    io::load_keras_weights(*this, path);
    weights_written();
    return;
  }
  assign_weights(io::read_weights_file(path), path);
}

void ModelImpl::weights_written() {
  if (replicas_) replicas_->sync_from_model();
}

namespace {

// The file's tensor for each of `ws`: by path when the file names each of them once (a file of this architecture,
// whatever order it lists them in), else by position.
std::vector<const io::NamedTensor*> match_weights(const std::vector<VariablePtr>& ws, const io::WeightsFile& file) {
  std::unordered_map<std::string, const io::NamedTensor*> by_path;
  for (const io::NamedTensor& t : file.weights) by_path.emplace(t.name, &t);
  std::unordered_set<std::string> model_paths;
  bool by_name = by_path.size() == file.weights.size();
  for (const VariablePtr& v : ws) by_name = by_name && model_paths.insert(v->path).second && by_path.count(v->path);
  std::vector<const io::NamedTensor*> out;
  for (std::size_t i = 0; i < ws.size(); ++i) out.push_back(by_name ? by_path.at(ws[i]->path) : &file.weights[i]);
  return out;
}

}  // namespace

void ModelImpl::assign_weights(const io::WeightsFile& file, const std::string& path) {
  const detail::ModelUse::Guard use = use_.change();
  const std::vector<VariablePtr> ws = weights();
  if (file.weights.size() != ws.size())
    throw std::invalid_argument("weights file '" + path + "' holds " + std::to_string(file.weights.size()) +
                                " weights, model '" + name() + "' has " + std::to_string(ws.size()) +
                                " (a file from another model?)");
  const std::vector<const io::NamedTensor*> values = match_weights(ws, file);
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (values[i]->value.shape() != ws[i]->value.shape())
      throw std::invalid_argument("weights file '" + path + "': weight " + std::to_string(i) + " ('" +
                                  values[i]->name + "') has shape " + values[i]->value.shape().to_string() +
                                  ", model weight '" + ws[i]->path + "' has shape " +
                                  ws[i]->value.shape().to_string() + " (a file from another model?)");
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->value.copy_from(values[i]->value);
  weights_written();
}

// ---- model configs ------------------------------------------------------------------------------------------

std::shared_ptr<ModelImpl> model_from_config(const Config& serialized) {
  const std::string& cls = serialized.at("class_name").as_string();
  const Config& cfg = serialized.at("config");
  const std::string name = cfg.contains("name") ? cfg.at("name").as_string() : "";
  if (cls == "Sequential") {
    std::vector<LayerPtr> layers;
    for (const Config& l : cfg.at("layers").as_list()) layers.push_back(layer_from_config(l));
    auto m = std::make_shared<SequentialImpl>(std::move(layers), name);
    return m;
  }
  if (cls != "Functional") throw ConfigError("model class '" + cls + "' (expected Functional or Sequential)");
  // Layers are made first, then their calls replayed until every node is placed: a shared layer's later call
  // may need a layer listed after it.
  struct Entry {
    LayerPtr layer;
    const Config* inbound;
    std::size_t done = 0;
  };
  std::vector<Entry> entries;
  std::unordered_map<std::string, std::size_t> by_name;
  std::unordered_map<std::string, std::vector<std::vector<SymbolicTensor>>> outputs;
  for (const Config& l : cfg.at("layers").as_list()) {
    Config layer_cfg = l;
    LayerPtr layer;
    if (l.at("class_name").as_string() == "Functional" || l.at("class_name").as_string() == "Sequential")
      layer = model_from_config(l);
    else
      layer = layer_from_config(l);
    const std::string lname = l.contains("name") ? l.at("name").as_string() : layer->name();
    by_name[lname] = entries.size();
    entries.push_back({layer, &l.at("inbound_nodes")});
    if (auto in = std::dynamic_pointer_cast<InputLayerImpl>(layer)) outputs[lname].push_back({in->output()});
  }
  const auto resolve = [&](const Config& ref, SymbolicTensor& out) {
    const auto& r = ref.as_list();
    auto it = outputs.find(r.at(0).as_string());
    if (it == outputs.end()) return false;
    const auto node = static_cast<std::size_t>(r.at(1).as_int());
    if (node >= it->second.size()) return false;
    out = it->second[node].at(static_cast<std::size_t>(r.at(2).as_int()));
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (auto& e : entries) {
      const auto& calls = e.inbound->as_list();
      while (e.done < calls.size()) {
        std::vector<SymbolicTensor> args;
        bool ready = true;
        for (const Config& ref : calls[e.done].as_list()) {
          SymbolicTensor t;
          if (!resolve(ref, t)) {
            ready = false;
            break;
          }
          args.push_back(t);
        }
        if (!ready) break;
        outputs[e.layer->name()].push_back((*e.layer)(args));
        ++e.done;
        progress = true;
      }
    }
  }
  for (const auto& e : entries)
    if (e.done < e.inbound->size())
      throw ConfigError("model config: the inputs of layer '" + e.layer->name() + "' cannot be resolved");
  const auto refs = [&](const Config& list) {
    std::vector<SymbolicTensor> ts;
    for (const Config& ref : list.as_list()) {
      SymbolicTensor t;
      if (!resolve(ref, t)) throw ConfigError("model config: unresolved input/output " + ref.to_json());
      ts.push_back(t);
    }
    return ts;
  };
  auto model = std::make_shared<ModelImpl>(refs(cfg.at("input_layers")), refs(cfg.at("output_layers")), name);
  // Keras' functional_from_config restores the model's own flag; its layers came with theirs.
  if (cfg.contains("trainable")) model->Layer::set_trainable(cfg.at("trainable").as_bool());
  return model;
}

namespace {
const bool models_registered = [] {
  register_layer("Functional", [](const Config& c) -> LayerPtr {
    Config s = Config::map();
    s.set("class_name", "Functional");
    s.set("config", c);
    return model_from_config(s);
  });
  register_layer("Sequential", [](const Config& c) -> LayerPtr {
    Config s = Config::map();
    s.set("class_name", "Sequential");
    s.set("config", c);
    return model_from_config(s);
  });
  return true;
}();
}  // namespace

void Model::save(const std::string& path) const {
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : impl_->weights()) named.push_back({v->path, v->value});
  Config extra = Config::map();
  extra.set("model", impl_->serialize());
  io::write_weights_file(path, named, extra);
}

Model Model::load(const std::string& path) {
  const io::WeightsFile file = [&] {
    try {
      return io::read_weights_file(path);
    } catch (const std::runtime_error& e) {
      // The reader names a weights file; this one is a model's.
      const std::string what = e.what(), prefix = "weights file '" + path + "': ";
      if (what.rfind(prefix, 0) != 0) throw;
      throw std::runtime_error("model file '" + path + "': " + what.substr(prefix.size()));
    }
  }();
  // save() stores the model's config (a map) under "model"; save_weights() only the model's name.
  if (!file.extra.contains("model") || !file.extra.at("model").is_map())
    throw std::invalid_argument("'" + path + "' holds weights only (save_weights); load it with load_weights()");
  // Every weight the stored architecture creates is in the file, so building it needs about the file's tensors
  // (twice: initial values, then the stored ones) and little else; a damaged config asking for far more is an
  // error before it is allocated.
  std::size_t stored = 0;
  for (const io::NamedTensor& t : file.weights) stored += t.value.nbytes();
  std::shared_ptr<ModelImpl> impl;
  try {
    AllocationLimit limit(4 * stored + (std::size_t{64} << 20),
                          "model file '" + path + "': the stored architecture does not match the stored weights");
    impl = model_from_config(file.extra.at("model"));
  } catch (const ConfigError& e) {
    throw ConfigError("model file '" + path + "': " + e.what());
  }
  Model m(impl);
  m->assign_weights(file, path);
  return m;
}

}  // namespace tower
