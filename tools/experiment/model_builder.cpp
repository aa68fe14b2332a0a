#include "tools/experiment/model_builder.h"

#include <algorithm>
#include <map>

#include "api/engine/input_layer.h"
#include "api/engine/layer_options.h"
#include "api/engine/layer_registry.h"
#include "tools/experiment/applications.h"
#include "tools/experiment/keras_form.h"

namespace tower::experiment {

namespace {

bool is_input_type(const std::string& type) { return type == "Input" || type == "InputLayer"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Shape shape_of(const LocatedConfig& c) {
  std::vector<Index> dims;
  for (std::int64_t d : c.as_int_list(true)) dims.push_back(d);
  return Shape(dims);
}

// The layer of a {type: ..., <arguments>} spec (without `inputs`), through the layer registry.
LayerPtr make_layer(const LocatedConfig& spec) {
  const std::string& type = spec["type"].as_string();
  if (layer_registry().find(type).empty()) spec["type"].locate([&] { layer_registry().resolve(Config(type)); });
  return spec.locate([&] { return layer_from_config(to_keras_form(without_keys(spec.value(), {"inputs"}))); });
}

std::shared_ptr<InputLayerImpl> make_input(const LocatedConfig& spec, const Shape& fallback) {
  spec.require_keys({"type", "shape", "batch_size", "name"});
  InputLayerOptions o;
  o.shape = spec["shape"].is_null() ? fallback : shape_of(spec["shape"]);
  if (!spec["batch_size"].is_null()) o.batch_size = spec["batch_size"].as_int();
  o.name = spec.get_string("name", "");
  return spec.locate([&] { return std::make_shared<InputLayerImpl>(o); });
}

Model build_sequential(const LocatedConfig& model, const Shape& data_shape) {
  const LocatedConfig layers = model["layers"];
  std::size_t first = 0;
  std::shared_ptr<InputLayerImpl> input;
  const Shape fallback = model["input_shape"].is_null() ? data_shape : shape_of(model["input_shape"]);
  if (is_input_type(layers[0]["type"].as_string())) {
    if (!model["input_shape"].is_null())
      layers[0].fail("give the input shape once: in this Input layer or in model.input_shape");
    input = make_input(layers[0], fallback);
    first = 1;
  } else {
    input = std::make_shared<InputLayerImpl>(InputLayerOptions{.shape = fallback});
  }
  Sequential seq({input}, model.get_string("name", ""));
  for (std::size_t i = first; i < layers.size(); ++i) {
    const LocatedConfig spec = layers[i];
    if (is_input_type(spec["type"].as_string())) spec["type"].fail("an Input layer can only be the first layer");
    LayerPtr layer = make_layer(spec);
    spec.locate([&] { seq.add(layer); });
  }
  return seq;
}

// "name" or "name[i]" -> the tensor, or a located error naming the known nodes.
SymbolicTensor resolve(const LocatedConfig& ref, const std::map<std::string, SymbolicTensors>& nodes,
                       const std::vector<std::string>& order) {
  std::string name = ref.as_string();
  int index = -1;
  if (const std::size_t open = name.find('['); open != std::string::npos && name.back() == ']') {
    const std::string digits = name.substr(open + 1, name.size() - open - 2);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      ref.fail("bad output index in '" + name + "'");
    index = std::stoi(digits);
    name = name.substr(0, open);
  }
  auto it = nodes.find(name);
  if (it == nodes.end()) {
    const std::string near = tower::detail::closest_key(name, order);
    ref.fail("no node named '" + name + "' before this one" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
             "; nodes so far: " + join(order));
  }
  const SymbolicTensors& outs = it->second;
  if (index < 0) {
    if (outs.size() != 1)
      ref.fail("node '" + name + "' has " + std::to_string(outs.size()) + " outputs; pick one with '" + name + "[i]'");
    return outs[0];
  }
  if (static_cast<std::size_t>(index) >= outs.size())
    ref.fail("node '" + name + "' has " + std::to_string(outs.size()) + " outputs, no output " + std::to_string(index));
  return outs[static_cast<std::size_t>(index)];
}

Model build_functional(const LocatedConfig& model, const Shape& data_shape) {
  const LocatedConfig specs = model["nodes"];
  std::map<std::string, SymbolicTensors> nodes;
  std::vector<std::string> order;
  std::vector<SymbolicTensor> inputs;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const LocatedConfig spec = specs[i];
    SymbolicTensors outs;
    std::string name;
    if (is_input_type(spec["type"].as_string())) {
      if (!spec["inputs"].is_null()) spec["inputs"].fail_key("an Input node takes no inputs");
      auto input = make_input(spec, data_shape);
      outs = SymbolicTensors{input->output()};
      inputs.push_back(outs[0]);
      name = input->name();
    } else {
      LayerPtr layer = make_layer(spec);
      name = layer->name();
      const LocatedConfig refs = spec["inputs"];
      std::vector<SymbolicTensor> args;
      if (refs.is_null()) {
        if (order.empty()) spec.fail("the first node must be an Input node (type: Input, shape: [...])");
        const SymbolicTensors& previous = nodes[order.back()];
        if (previous.size() != 1)
          spec.fail("the node before has " + std::to_string(previous.size()) + " outputs; name one in 'inputs'");
        args.push_back(previous[0]);
      } else if (refs.value().is_list()) {
        for (std::size_t k = 0; k < refs.size(); ++k) args.push_back(resolve(refs[k], nodes, order));
      } else {
        args.push_back(resolve(refs, nodes, order));
      }
      outs = spec.locate([&] {
        return refs.value().is_list() ? (*layer)(args) : SymbolicTensors{(*layer)(args[0])};
      });
    }
    if (nodes.count(name)) (spec["name"].exists() ? spec["name"] : spec).fail("duplicate node name '" + name + "'");
    nodes[name] = outs;
    order.push_back(name);
  }
  if (inputs.empty()) specs.fail("a functional model needs at least one Input node (type: Input, shape: [...])");
  std::vector<SymbolicTensor> outputs;
  const LocatedConfig out = model["outputs"];
  if (out.is_null()) {
    const SymbolicTensors& last = nodes[order.back()];
    outputs.assign(last.begin(), last.end());
  } else if (out.value().is_list()) {
    for (std::size_t k = 0; k < out.size(); ++k) outputs.push_back(resolve(out[k], nodes, order));
  } else {
    outputs.push_back(resolve(out, nodes, order));
  }
  return model.locate([&] { return Model(inputs, outputs, model.get_string("name", "")); });
}

}  // namespace

Model build_model(const Experiment& experiment, const Shape& data_shape) {
  const LocatedConfig model = experiment.at("model");
  if (!model["application"].is_null()) {
    const LocatedConfig app = model["application"];
    const std::vector<std::string> known = application_names();
    const std::string& name = app.as_string();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      const std::string near = tower::detail::closest_key(name, known);
      app.fail("unknown application '" + name + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
               "; known applications: " + (known.empty() ? std::string("none in this build") : join(known)));
    }
    const Config options = without_keys(model.value(), {"application"});
    return model.locate([&] { return application_from_config(name, options, data_shape); });
  }
  if (!model["layers"].is_null()) return build_sequential(model, data_shape);
  return build_functional(model, data_shape);
}

}  // namespace tower::experiment
