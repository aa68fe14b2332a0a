#include "api/models/model.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "api/core/allocator.h"
#include "api/engine/layer_registry.h"

namespace tower {

// ---- ModelImpl ------------------------------------------------------------------------------------------------

ModelImpl::ModelImpl(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs, std::string name)
    : Layer("Functional", std::move(name)) {
  set_graph(std::move(inputs), std::move(outputs));
}

ModelImpl::ModelImpl(std::string type, std::string name) : Layer(std::move(type), std::move(name)) {}

void ModelImpl::require_graph(const char* what) const {
  if (!has_graph())
    throw std::logic_error("Model '" + name() + "': " + what +
                           " needs the input shape; start with an InputLayer or call build(input_shape)");
}

namespace {

// Throws if `model` is reachable from itself through nested models.
void check_no_self_nesting(const ModelImpl& root, const ModelImpl& model, std::vector<std::string>& path) {
  for (const auto& node : model.nodes()) {
    const auto* nested = dynamic_cast<const ModelImpl*>(node->layer().get());
    if (!nested) continue;
    path.push_back(nested->name());
    if (nested == &root) {
      std::string chain = root.name();
      for (const std::string& p : path) chain += " -> " + p;
      throw ShapeError("Model '" + root.name() + "': the graph has a cycle: " + chain);
    }
    check_no_self_nesting(root, *nested, path);
    path.pop_back();
  }
}

// Keras refuses a model in which two layers share a name: weight files and configs refer to layers by name.
void check_unique_layer_names(const std::string& who, const std::vector<std::shared_ptr<Node>>& nodes) {
  std::unordered_set<const Layer*> seen;
  std::map<std::string, int> count;
  for (const auto& node : nodes)
    if (seen.insert(node->layer().get()).second) ++count[node->layer()->name()];
  for (const auto& node : nodes)
    if (const int n = count[node->layer()->name()]; n > 1)
      throw std::invalid_argument(who + "The name \"" + node->layer()->name() + "\" is used " + std::to_string(n) +
                                  " times in the model. All layer names should be unique.");
}

// The trainable weights of `model`'s layers, not asking `model` itself: Keras filters every variable on its own
// flag, which the last set_trainable reaching its layer set, so a layer unfrozen inside a frozen nested model
// trains.
void collect_trainable(const ModelImpl& model, std::vector<VariablePtr>& out, std::unordered_set<const Variable*>& seen) {
  for (const LayerPtr& l : model.layers()) {
    if (const auto* nested = dynamic_cast<const ModelImpl*>(l.get())) {
      collect_trainable(*nested, out, seen);
      continue;
    }
    for (const VariablePtr& v : l->trainable_weights())
      if (seen.insert(v.get()).second) out.push_back(v);
  }
}

// Keras' map_graph (keras/src/ops/function.py): see ModelImpl::layers().
std::vector<LayerPtr> layers_in_keras_order(const Graph& graph) {
  // Keras' _build_map: a depth-first walk from the outputs numbers the layers as it first meets them and lists
  // each node after its inputs.
  std::unordered_map<const Layer*, int> first_met;
  std::unordered_set<const Node*> finished;
  std::vector<const Node*> inputs_first;
  std::function<void(const Node*)> walk = [&](const Node* node) {
    if (finished.count(node)) return;
    first_met.emplace(node->layer().get(), static_cast<int>(first_met.size()));
    for (const SymbolicTensor& in : node->inputs()) walk(in.node());
    finished.insert(node);
    inputs_first.push_back(node);
  };
  for (const SymbolicTensor& out : graph.outputs) walk(out.node());

  // Depths from the outputs down, a layer as deep as its deepest call.
  std::unordered_map<const Node*, int> node_depth;
  std::unordered_map<const Layer*, int> layer_depth;
  std::vector<LayerPtr> layers;
  for (auto it = inputs_first.rbegin(); it != inputs_first.rend(); ++it) {
    const Node* node = *it;
    const auto [at, added] = layer_depth.emplace(node->layer().get(), 0);
    if (added) layers.push_back(node->layer());
    const int depth = std::max(node_depth[node], at->second);
    at->second = depth;
    for (const SymbolicTensor& in : node->inputs()) {
      int& d = node_depth[in.node()];
      d = std::max(d, depth + 1);
    }
  }
  for (const SymbolicTensor& in : graph.inputs)
    if (layer_depth.emplace(&in.layer(), 0).second) {
      first_met[&in.layer()] = -1;
      layers.push_back(in.node()->layer());
    }
  std::stable_sort(layers.begin(), layers.end(), [&](const LayerPtr& a, const LayerPtr& b) {
    const int da = layer_depth.at(a.get()), db = layer_depth.at(b.get());
    return da != db ? da > db : first_met.at(a.get()) < first_met.at(b.get());
  });
  return layers;
}

}  // namespace

void ModelImpl::set_graph(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs) {
  const detail::ModelUse::Guard use = use_.change();
  const std::string who = "Model '" + name() + "': ";
  if (outputs.empty()) throw ShapeError(who + "a model needs at least one output");
  std::unordered_set<const Node*> input_nodes;
  for (const SymbolicTensor& t : inputs) {
    if (!t.defined() || !dynamic_cast<InputLayerImpl*>(t.node()->layer().get()))
      throw ShapeError(who + "input '" + t.name() + "' is not an Input() tensor");
    if (!input_nodes.insert(t.node()).second) throw ShapeError(who + "input '" + t.name() + "' is listed twice");
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[i] == outputs[j]) throw ShapeError(who + "output '" + outputs[i].name() + "' is listed twice");

  // Walk back from the outputs; every path must end at one of the given inputs.
  std::unordered_set<const Node*> seen;
  std::vector<std::shared_ptr<Node>> found;
  std::function<void(const SymbolicTensor&, const std::string&)> visit = [&](const SymbolicTensor& t,
                                                                            const std::string& via) {
    if (!t.defined()) throw ShapeError(who + "an undefined tensor feeds " + via);
    const std::shared_ptr<Node>& node = t.node_ptr();
    if (!seen.insert(node.get()).second) return;
    found.push_back(node);
    if (dynamic_cast<InputLayerImpl*>(node->layer().get())) {
      if (!input_nodes.count(node.get())) {
        std::string given;
        for (const SymbolicTensor& in : inputs) given += (given.empty() ? "" : ", ") + in.name();
        throw ShapeError(who + "graph disconnected: " + via + " depends on input '" + t.name() +
                         "', which is not among the model's inputs [" + given + "]");
      }
      return;
    }
    for (const SymbolicTensor& in : node->inputs()) visit(in, "layer '" + node->layer()->name() + "'");
    for (const SymbolicTensor& m : node->input_masks())
      if (m.defined()) visit(m, "the mask of an input of layer '" + node->layer()->name() + "'");
  };
  for (const SymbolicTensor& out : outputs) visit(out, "output '" + out.name() + "'");
  // The outputs' masks reach the losses and metrics.
  for (const SymbolicTensor& out : outputs)
    if (const SymbolicTensor m = out.mask(); m.defined()) visit(m, "the mask of output '" + out.name() + "'");
  for (const SymbolicTensor& in : inputs)
    if (!seen.count(in.node())) found.push_back(in.node_ptr());  // an unused input still binds data
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  check_unique_layer_names(who, found);

  graph_set_.store(false, std::memory_order_release);
  graph_.inputs = std::move(inputs);
  graph_.outputs = std::move(outputs);
  graph_.nodes = std::move(found);
  std::vector<std::string> path;
  try {
    check_no_self_nesting(*this, *this, path);
  } catch (...) {
    graph_.inputs.clear();
    graph_.outputs.clear();
    graph_.nodes.clear();
    layer_order_.clear();
    throw;
  }
  layer_order_ = layers_in_keras_order(graph_);  // asked on every training step (trainable_weights)
  graph_set_.store(true, std::memory_order_release);
  // Plans, captured steps and replicas hold the old graph's layers (a popped one among them): Keras rebuilds.
  replicas_.reset();
  replicas_made_ = false;
  plans_.clear();
  tape_plans_.clear();
  shape_plans_.clear();
  inference_plans_.clear();
  training_loop_->invalidate_step_graphs();
}


LayerPtr ModelImpl::get_layer(const std::string& layer_name) const {
  std::string names;
  for (const LayerPtr& l : layers()) {
    if (l->name() == layer_name) return l;
    names += (names.empty() ? "" : ", ") + l->name();
  }
  throw std::invalid_argument("Model '" + name() + "' has no layer '" + layer_name + "' (layers: " + names + ")");
}

std::vector<Shape> ModelImpl::compute_output_shape(const std::vector<Shape>& input_shapes) const {
  require_graph("calling the model");
  check_num_inputs(input_shapes, num_inputs());
  Index batch = -1;
  for (std::size_t i = 0; i < input_shapes.size(); ++i) {
    const Shape& want = graph_.inputs[i].shape();
    const Shape& got = input_shapes[i];
    bool ok = got.rank() == want.rank();
    for (int d = 1; ok && d < got.rank(); ++d) ok = want[d] < 0 || got[d] < 0 || want[d] == got[d];
    if (!ok)
      shape_error("input " + std::to_string(i) + " has shape " + got.to_string() + ", the model expects " +
                  want.to_string());
    if (got.rank() > 0) batch = got[0];
  }
  std::vector<Shape> out;
  for (const SymbolicTensor& t : graph_.outputs) out.push_back(t.shape().with_batch(batch));
  return out;
}

void ModelImpl::forward(const ForwardContext&) {
  throw std::logic_error(where() + "a nested model is inlined by the plan and never run as one step");
}

void ModelImpl::backward(const BackwardContext&) {
  throw std::logic_error(where() + "a nested model is inlined by the plan and never run as one step");
}

bool ModelImpl::has_training_behavior() const {
  for (const LayerPtr& l : layers())
    if (l->has_training_behavior()) return true;
  return false;
}

std::vector<VariablePtr> ModelImpl::weights() const {
  std::vector<VariablePtr> out;
  std::unordered_set<const Variable*> seen;
  for (const LayerPtr& l : layers())
    for (const VariablePtr& v : l->weights())
      if (seen.insert(v.get()).second) out.push_back(v);
  return out;
}

std::vector<VariablePtr> ModelImpl::trainable_weights() const {
  std::vector<VariablePtr> out;
  if (!trainable()) return out;
  std::unordered_set<const Variable*> seen;
  collect_trainable(*this, out, seen);
  return out;
}

std::vector<VariablePtr> ModelImpl::non_trainable_weights() const {
  std::vector<VariablePtr> trainable_now = trainable_weights();
  std::unordered_set<const Variable*> t;
  for (const VariablePtr& v : trainable_now) t.insert(v.get());
  std::vector<VariablePtr> out;
  for (const VariablePtr& v : weights())
    if (!t.count(v.get())) out.push_back(v);
  return out;
}

void ModelImpl::set_trainable(bool trainable) {
  Layer::set_trainable(trainable);
  for (const LayerPtr& l : layers())
    if (l.get() != this) l->set_trainable(trainable);
}

Config ModelImpl::get_config() const {
  // Keras' functional config: layers with their inbound nodes as [layer name, node index, tensor index].
  Config c = Config::map();
  c.set("name", name());
  std::unordered_map<const Node*, int> node_index;
  std::unordered_map<const Layer*, int> calls;
  for (const auto& node : graph_.nodes) node_index[node.get()] = calls[node->layer().get()]++;
  Config layers_cfg = Config::list();
  for (const LayerPtr& l : layers()) {
    Config entry = l->serialize();
    entry.set("name", l->name());
    Config inbound = Config::list();
    for (const auto& node : graph_.nodes) {
      if (node->layer() != l || node->inputs().empty()) continue;
      Config args = Config::list();
      for (const SymbolicTensor& in : node->inputs())
        args.push_back(Config::List{Config(in.layer().name()), Config(node_index.at(in.node())), Config(in.index())});
      inbound.push_back(args);
    }
    entry.set("inbound_nodes", inbound);
    layers_cfg.push_back(entry);
  }
  c.set("layers", layers_cfg);
  const auto refs = [&](const std::vector<SymbolicTensor>& ts) {
    Config l = Config::list();
    for (const SymbolicTensor& t : ts)
      l.push_back(Config::List{Config(t.layer().name()), Config(node_index.at(t.node())), Config(t.index())});
    return l;
  };
  c.set("input_layers", refs(graph_.inputs));
  c.set("output_layers", refs(graph_.outputs));
  return c;
}

// ---- summary -----------------------------------------------------------------------------------------------

namespace {

std::string with_commas(Index n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string human_bytes(Index params) {
  const double bytes = static_cast<double>(params) * 4.0;
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

// Display width of a UTF-8 string (each code point counts one column).
std::size_t width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

std::string pad(const std::string& s, std::size_t w, bool right) {
  const std::size_t n = width(s);
  if (n >= w) return s;
  return right ? std::string(w - n, ' ') + s : s + std::string(w - n, ' ');
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

void ModelImpl::summary(std::ostream& os, int) const {
  require_graph("summary()");
  const bool sequential = type() == "Sequential";
  std::unordered_map<const Layer*, std::vector<const Node*>> layer_nodes;
  for (const auto& node : graph_.nodes) layer_nodes[node->layer().get()].push_back(node.get());

  std::vector<std::vector<std::string>> rows;
  for (const LayerPtr& l : layers()) {
    const auto& lnodes = layer_nodes[l.get()];
    std::string shape;
    for (const Node* n : lnodes) {
      std::string s;
      for (int i = 0; i < n->num_outputs(); ++i) s += (i ? ", " : "") + n->output_shapes()[static_cast<std::size_t>(i)].to_string();
      if (shape.empty()) shape = s;
      else if (shape != s) shape = "multiple";
    }
    std::vector<std::string> row{l->name() + " (" + l->type() + ")", shape, with_commas(l->count_params())};
    if (!sequential) {
      std::string connected;
      for (const Node* n : lnodes)
        for (const SymbolicTensor& in : n->inputs()) {
          int call = 0;
          for (const Node* other : layer_nodes[&in.layer()]) {
            if (other == in.node()) break;
            ++call;
          }
          connected += (connected.empty() ? "" : ", ") + in.layer().name() + "[" + std::to_string(call) + "][" +
                       std::to_string(in.index()) + "]";
        }
      row.push_back(connected.empty() ? "-" : connected);
    }
    rows.push_back(row);
  }

  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  if (!sequential) header.push_back("Connected to");
  std::vector<std::size_t> widths{31, 22, 13, 20};
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
  const std::size_t cols = header.size();
  const auto line = [&](const char* left, const char* mid, const char* right, const char* fill) {
    std::string s = left;
    for (std::size_t i = 0; i < cols; ++i) s += repeat(fill, widths[i] + 2) + (i + 1 < cols ? mid : right);
    return s;
  };
  const auto cells = [&](const std::vector<std::string>& row, const char* sep) {
    std::string s = sep;
    for (std::size_t i = 0; i < cols; ++i) s += " " + pad(row[i], widths[i], i == 2) + " " + sep;
    return s;
  };

  os << "Model: \"" << name() << "\"\n";
  os << line("┏", "┳", "┓", "━") << "\n" << cells(header, "┃") << "\n" << line("┡", "╇", "┩", "━") << "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    os << cells(rows[r], "│") << "\n";
    if (r + 1 < rows.size() && !sequential) os << line("├", "┼", "┤", "─") << "\n";
  }
  os << line("└", "┴", "┘", "─") << "\n";
  Index trainable = 0, total = count_params();
  for (const VariablePtr& v : trainable_weights()) trainable += v->value.numel();
  os << " Total params: " << with_commas(total) << " (" << human_bytes(total) << ")\n";
  os << " Trainable params: " << with_commas(trainable) << " (" << human_bytes(trainable) << ")\n";
  os << " Non-trainable params: " << with_commas(total - trainable) << " (" << human_bytes(total - trainable) << ")\n";
}

// ---- Sequential --------------------------------------------------------------------------------------------

SequentialImpl::SequentialImpl(std::vector<LayerPtr> layers, std::string name)
    : ModelImpl("Sequential", std::move(name)) {
  for (LayerPtr& l : layers) add(std::move(l));
}

void SequentialImpl::add(LayerPtr layer) {
  if (!layer) throw std::invalid_argument("Model '" + name() + "': add() of a null layer");
  if (auto input = std::dynamic_pointer_cast<InputLayerImpl>(layer)) {
    if (input_layer_ || !layers_.empty())
      throw std::invalid_argument("Model '" + name() + "': an InputLayer can only be the first layer");
    input_layer_ = input;
    rebuild();
    return;
  }
  if (layer.get() == this) throw ShapeError("Model '" + name() + "': the graph has a cycle: a model cannot contain itself");
  for (const LayerPtr& l : layers_)
    if (l != layer && l->name() == layer->name())
      throw std::invalid_argument("Model '" + name() + "': all layers added to a Sequential model should have unique "
                                  "names; '" + layer->name() + "' is already the name of a layer in this model");
  if (layer->num_inputs() != 1 && layer->num_inputs() != -1)
    throw std::invalid_argument("Model '" + name() + "': layer '" + layer->name() + "' takes " +
                                std::to_string(layer->num_inputs()) + " inputs; Sequential layers take one");
  layers_.push_back(std::move(layer));
  if (!input_layer_) return;
  try {
    rebuild();
  } catch (...) {
    layers_.pop_back();
    rebuild();
    throw;
  }
}

void SequentialImpl::pop() {
  if (layers_.empty()) throw std::logic_error("Model '" + name() + "': pop() of an empty Sequential");
  layers_.pop_back();
  if (input_layer_) rebuild();
}

void SequentialImpl::build_for(const Shape& input_shape) {
  if (input_layer_) {
    if (input_layer_->batch_shape().without_batch() == input_shape) return;
    throw std::invalid_argument("Model '" + name() + "': built for input " +
                                input_layer_->batch_shape().without_batch().to_string() + ", asked to build for " +
                                input_shape.to_string());
  }
  input_layer_ = std::make_shared<InputLayerImpl>(InputLayerOptions{.shape = input_shape});
  try {
    rebuild();
  } catch (...) {
    input_layer_.reset();
    throw;
  }
}

std::vector<std::string> SequentialImpl::output_names() const {
  if (has_graph()) return ModelImpl::output_names();
  if (layers_.empty()) throw std::logic_error("Model '" + name() + "': a Sequential without layers has no output");
  return {layers_.back()->name()};
}

std::vector<Shape> SequentialImpl::compute_output_shape(const std::vector<Shape>& input_shapes) const {
  if (has_graph()) return ModelImpl::compute_output_shape(input_shapes);
  check_num_inputs(input_shapes, 1);
  std::vector<Shape> shapes = input_shapes;
  for (const LayerPtr& l : layers_) shapes = l->compute_output_shape(shapes);
  return shapes;
}

void SequentialImpl::build(const std::vector<Shape>& input_shapes) {
  if (!has_graph()) build_for(input_shapes.at(0).without_batch());
}

void SequentialImpl::rebuild() {
  SymbolicTensor x = input_layer_->output();
  const SymbolicTensor in = x;
  for (const LayerPtr& l : layers_) x = (*l)(x);
  set_graph({in}, {x});
}

Config SequentialImpl::get_config() const {
  Config c = Config::map();
  c.set("name", name());
  Config layers_cfg = Config::list();
  if (input_layer_) layers_cfg.push_back(input_layer_->serialize());
  for (const LayerPtr& l : layers_) layers_cfg.push_back(l->serialize());
  c.set("layers", layers_cfg);
  return c;
}

// ---- handles -----------------------------------------------------------------------------------------------

Model::Model(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs, std::string name)
    : impl_(std::make_shared<ModelImpl>(std::move(inputs), std::move(outputs), std::move(name))) {}

Model::Model(const SymbolicTensor& input, const SymbolicTensor& output, std::string name)
    : Model(std::vector<SymbolicTensor>{input}, std::vector<SymbolicTensor>{output}, std::move(name)) {}

Model::Model(std::shared_ptr<ModelImpl> impl) : impl_(std::move(impl)) {
  if (!impl_) throw std::invalid_argument("Model from a null implementation");
}

void Model::summary() const { impl_->summary(std::cout); }

std::string Model::summary_string() const {
  std::ostringstream os;
  impl_->summary(os);
  return os.str();
}

Sequential::Sequential(std::vector<LayerPtr> layers, std::string name)
    : Model(std::make_shared<SequentialImpl>(std::move(layers), std::move(name))) {}

// ---- training: the loop is training/training_loop.cpp ---------------------------------------------------

void ModelImpl::compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                        std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights,
                        std::vector<std::vector<metrics::MetricPtr>> weighted_metrics) {
  const detail::ModelUse::Guard use = use_.change();
  if (detail::DistributionPtr d = detail::current_distribution(); d && d != distribution_) {
    distribution_ = std::move(d);
    replicas_.reset();
    replicas_made_ = false;
  }
  training_loop_->compile(std::move(optimizer), std::move(losses), std::move(metrics), std::move(loss_weights),
                          std::move(weighted_metrics));
}

std::vector<std::string> ModelImpl::output_names() const {
  std::vector<std::string> names;
  for (const SymbolicTensor& t : outputs()) names.push_back(t.layer().name());
  return names;
}

void ModelImpl::build_from(const data::Dataset& data) {
  if (has_graph()) return;
  const std::vector<std::uint64_t> counts = data.pass_counts();
  std::optional<data::Element> first = data.make_iterator()->next();
  data.set_pass_counts(counts);
  if (!first) throw std::invalid_argument("Model '" + name() + "' has no input shape yet and its data is empty");
  build_from(*first);
}

void ModelImpl::build_from(const data::Element& batch) {
  if (has_graph() || batch.empty()) return;
  const detail::ModelUse::Guard use = use_.change();
  if (has_graph()) return;  // built by another thread meanwhile
  if (batch[0].rank() == 0)
    throw std::invalid_argument("Model '" + name() + "': cannot build for a scalar input (a batch needs axis 0)");
  build_for(batch[0].shape().without_batch());
}

std::vector<Tensor> ModelImpl::predict(const data::Dataset& data, const PredictOptions& options) {
  build_from(data);
  return training_loop_->predict(data, options);
}

detail::Replicas* ModelImpl::replicas() {
  if (!replicas_made_ && distribution_) {
    require_graph("running the model");
    replicas_ = distribution_->replicate(*this);
    replicas_made_ = true;
  }
  return replicas_.get();
}

Device ModelImpl::device() const {
  const std::lock_guard lock(device_mutex_);
  if (!device_) device_ = default_device();
  return *device_;
}

namespace {
void move_variables(const std::vector<VariablePtr>& variables, Device device) {
  for (const VariablePtr& v : variables)
    if (v && v->value.defined() && !(v->value.device() == device)) v->value = v->value.to(device);
}
}  // namespace

void ModelImpl::to(Device device) {
  allocator_for(device);  // throws, naming the device, when this build or machine does not have it
  const detail::ModelUse::Guard use = use_.change();
  move_variables(weights(), device);
  if (optimizer() && optimizer()->built()) move_variables(optimizer()->variables(), device);
  const std::lock_guard lock(device_mutex_);
  if (device_ && !(*device_ == device)) {
    plans_.clear();
    tape_plans_.clear();
    shape_plans_.clear();
    inference_plans_.clear();
    training_loop_->invalidate_step_graphs();
  }
  device_ = device;
}

void ModelImpl::train_step(const data::Element& batch) { training_loop_->default_train_step(batch); }

void ModelImpl::test_step(const data::Element& batch) { training_loop_->default_test_step(batch); }

Plan& ModelImpl::plan_for(Index batch_size, bool training) {
  require_graph("running the model");
  PlanOptions o;
  o.batch_size = batch_size;
  o.training = training;
  o.backward = training;
  return cached_plan(plans_[{batch_size, training}], o);
}

bool ModelImpl::has_unknown_input_sizes() const {
  for (const SymbolicTensor& t : graph_.inputs)
    for (int d = 1; d < t.shape().rank(); ++d)
      if (t.shape()[d] < 0) return true;
  return false;
}

Plan& ModelImpl::plan_for(const std::vector<Shape>& input_shapes, bool training) {
  require_graph("running the model");
  if (input_shapes.empty() || input_shapes[0].rank() == 0)
    throw std::invalid_argument("Model '" + name() + "': plan_for needs the inputs' shapes with their batch dimension");
  if (!has_unknown_input_sizes()) return plan_for(input_shapes[0][0], training);
  const std::pair<std::vector<Shape>, bool> key{input_shapes, training};
  auto it = std::find_if(shape_plans_.begin(), shape_plans_.end(), [&](const auto& e) { return e.first == key; });
  if (it != shape_plans_.end()) {
    shape_plans_.splice(shape_plans_.begin(), shape_plans_, it);
  } else {
    shape_plans_.emplace_front(key, nullptr);
    if (shape_plans_.size() > kShapePlans) {
      shape_plans_.pop_back();
      training_loop_->invalidate_step_graphs();  // a captured step may hold the dropped plan
    }
  }
  PlanOptions o;
  o.batch_size = input_shapes[0][0];
  o.training = training;
  o.backward = training;
  o.input_shapes = input_shapes;
  return cached_plan(shape_plans_.front().second, o);
}

Plan& ModelImpl::tape_plan(Index batch_size, int call, bool input_gradients) {
  if (call == 0 && !input_gradients) return plan_for(batch_size, true);
  require_graph("running the model");
  PlanOptions o;
  o.batch_size = batch_size;
  o.training = true;
  o.backward = true;
  o.input_gradients = input_gradients;
  return cached_plan(tape_plans_[{batch_size, call, input_gradients}], o);
}

Plan& ModelImpl::cached_plan(std::unique_ptr<Plan>& slot, PlanOptions options) {
  if (slot && options.backward) {
    // Freezing or unfreezing a layer changes what gets gradients: such a plan is stale.
    const std::vector<VariablePtr> now = trainable_weights();
    if (now != slot->trainable_weights()) {
      slot.reset();
      training_loop_->invalidate_step_graphs();
    }
  }
  if (!slot) {
    // Layers built since the last move (and every weight, the first time) join the model's device.
    if (!device().is_cpu()) move_variables(weights(), device());
    options.device = device();
    slot = std::make_unique<Plan>(*this, options);
  }
  return *slot;
}

void Model::compile(optimizers::OptimizerPtr optimizer, losses::LossPtr loss, std::vector<metrics::MetricPtr> metrics,
                    std::vector<metrics::MetricPtr> weighted_metrics) {
  impl_->compile(std::move(optimizer), {std::move(loss)}, {std::move(metrics)}, {}, {std::move(weighted_metrics)});
}

void Model::compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                    std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights,
                    std::vector<std::vector<metrics::MetricPtr>> weighted_metrics) {
  impl_->compile(std::move(optimizer), std::move(losses), std::move(metrics), std::move(loss_weights),
                 std::move(weighted_metrics));
}

callbacks::History Model::fit(const data::Dataset& data, int epochs) {
  FitOptions o;
  o.epochs = epochs;
  return fit(data, o);
}

callbacks::History Model::fit(const data::Dataset& data, FitOptions options) {
  return impl_->training_loop().fit(data, options);
}

callbacks::History Model::fit(const Tensor& x, const Tensor& y, FitOptions options) {
  if (x.rank() == 0 || y.rank() == 0 || x.dim(0) != y.dim(0))
    throw std::invalid_argument("Model '" + name() + "': fit() got x of shape " + x.shape().to_string() +
                                " and y of shape " + y.shape().to_string() + ": they need the same number of examples");
  if (options.validation_split < 0 || options.validation_split >= 1)
    throw std::invalid_argument("Model '" + name() + "': validation_split must be in [0, 1), got " +
                                std::to_string(options.validation_split));
  Tensor xt = x, yt = y;
  if (options.validation_split > 0 && !options.validation_data) {
    // Keras' train_validation_split: the first floor(n * (1 - validation_split)) examples train.
    const Index n = x.dim(0);
    const auto split = static_cast<Index>(static_cast<double>(n) * (1.0 - options.validation_split));
    if (split == 0 || split == n)
      throw std::invalid_argument("Model '" + name() + "': fit(): the training data contains " + std::to_string(n) +
                                  " examples, which is not sufficient to split it into a validation and training "
                                  "set as specified by validation_split = " +
                                  std::to_string(options.validation_split) +
                                  ". Either provide more data, or a different value for validation_split");
    xt = x.slice(0, split);
    yt = y.slice(0, split);
    options.validation_data =
        data::Dataset::from_tensor_slices({x.slice(split, n), y.slice(split, n)}).batch(options.batch_size);
  }
  options.validation_split = 0;  // done here: the loop refuses it for a Dataset
  data::Dataset ds = data::Dataset::from_tensor_slices({xt, yt});
  if (options.shuffle) ds = ds.shuffle(xt.dim(0));
  return impl_->training_loop().fit(ds.batch(options.batch_size), options);
}

callbacks::Logs Model::evaluate(const data::Dataset& data, EvaluateOptions options) {
  return impl_->training_loop().evaluate(data, options);
}

callbacks::Logs Model::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options) {
  return evaluate(data::Dataset::from_tensor_slices({x, y}).batch(options.batch_size), options);
}

Tensor Model::predict(const Tensor& x, PredictOptions options) {
  impl_->build_from(data::Element{x});
  if (impl_->outputs().size() != 1)
    throw std::invalid_argument("Model '" + name() + "' has several outputs: use predict(Dataset)");
  return impl_->predict(data::Dataset::from_tensor_slices({x}).batch(options.batch_size), options)[0];
}

std::vector<Tensor> Model::predict(const data::Dataset& data, PredictOptions options) {
  return impl_->predict(data, options);
}

namespace {
Tensor single_output(const ModelImpl& model, std::vector<Tensor> outputs, const char* what) {
  if (outputs.size() != 1)
    throw std::invalid_argument("Model '" + model.name() + "' has " + std::to_string(outputs.size()) + " outputs: " +
                                what + " of a vector of inputs gives them all");
  return std::move(outputs[0]);
}
}  // namespace

Tensor Model::predict_on_batch(const Tensor& x) const {
  return single_output(*impl_, impl_->predict_on_batch({x}), "predict_on_batch()");
}

Tensor Model::operator()(const Tensor& x) const {
  return single_output(*impl_, impl_->call({x}), "a call");
}

callbacks::Logs Model::train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  data::Element batch{x, y};
  if (sample_weight.defined()) batch.push_back(sample_weight);
  return impl_->training_loop().train_on_batch(batch);
}

callbacks::Logs Model::test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  data::Element batch{x, y};
  if (sample_weight.defined()) batch.push_back(sample_weight);
  return impl_->training_loop().test_on_batch(batch);
}

}  // namespace tower
