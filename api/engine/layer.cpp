#include "api/engine/layer.h"

#include <algorithm>
#include <cctype>
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

SymbolicTensors Layer::operator()(const std::vector<SymbolicTensor>& inputs) {
  std::vector<Shape> shapes;
  for (const SymbolicTensor& t : inputs) {
    if (!t.defined()) shape_error("called on an undefined tensor");
    shapes.push_back(t.shape());
  }
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
