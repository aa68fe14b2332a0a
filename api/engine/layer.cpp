#include "api/engine/layer.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <mutex>

namespace tower {

namespace {
std::mutex name_mutex;
std::map<std::string, int>& name_counters() {
  static std::map<std::string, int> counters;
  return counters;
}
}  // namespace

std::string to_snake_case(const std::string& type) {
  std::string out;
  for (std::size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(type[i - 1]));
      const bool next_lower = i + 1 < type.size() && std::islower(static_cast<unsigned char>(type[i + 1]));
      const bool prev_upper = i > 0 && std::isupper(static_cast<unsigned char>(type[i - 1]));
      if (i > 0 && (prev_lower || (prev_upper && next_lower))) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string unique_layer_name(const std::string& type) {
  const std::string base = to_snake_case(type);
  std::lock_guard<std::mutex> lock(name_mutex);
  const int n = name_counters()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

void clear_session() {
  std::lock_guard<std::mutex> lock(name_mutex);
  name_counters().clear();
}

Layer::Layer(std::string type, std::string name) : type_(std::move(type)), name_(std::move(name)) {
  if (name_.empty()) name_ = unique_layer_name(type_);
}

std::string Layer::where() const { return "Layer '" + name_ + "' (" + type_ + "): "; }

void Layer::shape_error(const std::string& what) const { throw ShapeError(where() + what); }

void Layer::check_num_inputs(const std::vector<Shape>& shapes, int expected) const {
  if (expected < 0) {
    if (shapes.empty()) shape_error("expects at least one input, got none");
    return;
  }
  if (static_cast<int>(shapes.size()) != expected)
    shape_error("expects " + std::to_string(expected) + " input(s), got " + std::to_string(shapes.size()));
}

void Layer::ensure_built(const std::vector<Shape>& input_shapes) {
  if (built_) return;
  const std::size_t before = weights_.size();
  try {
    build(input_shapes);
  } catch (...) {
    weights_.resize(before);  // nothing half-built
    throw;
  }
  built_ = true;
}

void Layer::unbuild() {
  weights_.clear();
  built_ = false;
}

SymbolicTensor Layer::operator()(const SymbolicTensor& input) {
  SymbolicTensors out = (*this)(std::vector<SymbolicTensor>{input});
  if (out.size() != 1) shape_error("has " + std::to_string(out.size()) + " outputs; call it with a list");
  return out[0];
}

std::vector<SymbolicTensor> Layer::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                const std::vector<SymbolicTensor>& masks) const {
  (void)inputs;
  const SymbolicTensor first = masks.empty() ? SymbolicTensor() : masks[0];
  return std::vector<SymbolicTensor>(1, first);
}

SymbolicTensors Layer::operator()(const std::vector<SymbolicTensor>& inputs) {
  std::vector<Shape> shapes;
  std::vector<SymbolicTensor> masks;
  bool masked = false;
  for (const SymbolicTensor& t : inputs) {
    if (!t.defined()) shape_error("called on an undefined tensor");
    shapes.push_back(t.shape());
    masks.push_back(t.mask());
    masked = masked || masks.back().defined();
  }
  if (masked && graph())
    shape_error("is a model called on a tensor with a mask (Embedding's mask_zero, Masking): masks do not reach "
                "the layers of a nested model; call its layers on the tensor instead");
  check_num_inputs(shapes, num_inputs());
  // Shapes are checked before weights are made, so a bad call leaves the layer unbuilt.
  std::vector<Shape> out_shapes = compute_output_shape(shapes);
  ensure_built(shapes);
  std::shared_ptr<Layer> self;
  try {
    self = shared_from_this();
  } catch (const std::bad_weak_ptr&) {
    throw std::logic_error(where() + "a layer must be owned by a shared_ptr (use its handle type) to be called");
  }
  auto node = std::make_shared<Node>(self, inputs, out_shapes);
  SymbolicTensors outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.emplace_back(node, i);
  if (node->computes_mask()) return outputs;  // a mask's own computation carries no masks
  if (const Graph* g = graph())
    for (const SymbolicTensor& out : g->outputs)
      if (out.mask().defined())
        shape_error("has an output with a mask ('" + out.name() +
                    "'): masks do not leave a nested model; call its layers on the tensor instead");
  if (masked && uses_masks()) node->set_input_masks(masks);
  if (supports_masking()) {
    std::vector<SymbolicTensor> out_masks;
    {
      Node::MaskScope scope;
      out_masks = compute_mask(inputs, masks);
    }
    out_masks.resize(outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const SymbolicTensor& m = out_masks[i];
      if (!m.defined()) continue;
      const Shape& ms = m.shape();
      const Shape& os = outputs[i].shape();
      bool fits = ms.rank() <= os.rank();
      for (int d = 1; fits && d < ms.rank(); ++d) fits = ms[d] == os[d] || ms[d] < 0 || os[d] < 0;
      if (!fits)
        shape_error("computed a mask of shape " + ms.to_string() + " for an output of shape " + os.to_string() +
                    "; a mask covers the output's first dimensions");
    }
    node->set_output_masks(std::move(out_masks));
  } else if (masked) {
    std::cerr << "Warning: " << where()
              << "was passed an input with a mask attached to it. However, this layer does not support masking "
                 "and will therefore destroy the mask information. Downstream layers will not see the mask.\n";
  }
  return outputs;
}

Config Layer::serialize() const {
  Config cfg = get_config();
  cfg.set("trainable", trainable_);
  Config c = Config::map();
  c.set("class_name", type_);
  c.set("config", cfg);
  return c;
}

std::vector<KerasWeightGroup> Layer::keras_weight_groups() const {
  // Keras' Layer.save_own_variables order: variables created trainable, then the others, each in creation order.
  std::vector<VariablePtr> ordered;
  for (const VariablePtr& v : weights())
    if (v->trainable) ordered.push_back(v);
  for (const VariablePtr& v : weights())
    if (!v->trainable) ordered.push_back(v);
  const std::string own = keras_variables_group();
  std::vector<KerasWeightGroup> groups{{"", name(), {}}};
  if (!own.empty()) groups.push_back({own, to_snake_case(type()) + "_" + own, {}});
  for (const VariablePtr& v : ordered) {
    const auto slash = v->name.rfind('/');
    KerasWeightGroup* group;
    if (slash == std::string::npos) {
      group = own.empty() ? &groups.front() : &groups[1];
    } else {
      const std::string sublayer = v->name.substr(0, slash), path = keras_sublayer_group(sublayer);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const KerasWeightGroup& g) { return g.path == path; });
      if (it == groups.end()) it = groups.insert(groups.end(), {path, sublayer, {}});
      group = &*it;
    }
    group->variables.push_back(v);
  }
  return groups;
}

std::vector<KerasWeightGroup> keras_weight_groups_below(const std::string& path, const Layer& inner) {
  std::vector<KerasWeightGroup> groups = inner.keras_weight_groups();
  for (KerasWeightGroup& g : groups) g.path = g.path.empty() ? path : path + "/" + g.path;
  return groups;
}

std::vector<VariablePtr> Layer::trainable_weights() const {
  std::vector<VariablePtr> out;
  if (!trainable_) return out;
  for (const VariablePtr& v : weights())
    if (v->trainable) out.push_back(v);
  return out;
}

std::vector<VariablePtr> Layer::non_trainable_weights() const {
  std::vector<VariablePtr> out;
  for (const VariablePtr& v : weights())
    if (!v->trainable || !trainable_) out.push_back(v);
  return out;
}

Index Layer::count_params() const {
  Index n = 0;
  for (const VariablePtr& v : weights()) n += v->value.numel();
  return n;
}

VariablePtr Layer::add_weight(const std::string& name, const Shape& shape,
                              const initializers::Initializer& initializer, bool trainable,
                              const regularizers::Regularizer& regularizer) {
  for (const VariablePtr& v : weights_)
    if (v->name == name) throw std::logic_error(where() + "weight '" + name + "' added twice");
  auto v = std::make_shared<Variable>();
  v->name = name;
  v->path = name_ + "/" + name;
  v->value = Tensor(shape);
  initializer(v->value);
  v->trainable = trainable;
  v->regularizer = regularizer;
  weights_.push_back(v);
  return v;
}

}  // namespace tower
