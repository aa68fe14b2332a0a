#include "api/engine/plan.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <unordered_map>

#include "api/backend/backend.h"
#include "api/core/alignment.h"

namespace tower {

namespace {
constexpr std::size_t kAlign = kBufferAlignment;
std::size_t aligned(std::size_t n) { return align_bytes(n); }
std::atomic<std::uint64_t> plans_made{0};
}  // namespace

struct Plan::Value {
  Shape shape;
  std::size_t bytes = 0;
  int first = INT_MAX, last = -1;  // on the timeline: forward step s at s, its backward at 2S-1-s
  bool external = false;            // a model input, bound by set_input
  bool zero = false;                // a gradient nothing writes: zero-filled once
  int view_of = -1;                 // the value whose memory this one shows under its own shape (a Flatten's
                                    // output), never itself a view; -1: memory of its own
  std::size_t offset = 0;
  Tensor tensor;
  void use(int t) {
    first = std::min(first, t);
    last = std::max(last, t);
  }
};

struct Plan::Step {
  Layer* layer = nullptr;
  std::vector<int> in, out;
  std::vector<int> mask_in;  // the masks of the inputs, for a layer that uses_masks(): value ids, -1 for none
  bool computes_mask = false;
  std::unique_ptr<LayerState> state;
  bool run_backward = false;
  bool output_grad_is_logits = false;
  bool view = false;  // the output is a view of the input: forward has nothing to do
  std::vector<int> grad_out, grad_in, weight_grad;  // weight_grad: value id, or -1-k for weight_grads_[k]
  std::vector<Accumulate> accumulate;
  std::vector<int> gradients_ready;  // trainable weights whose gradient is final once this step's backward ran
  std::vector<Tensor> ins, outs, b_ins, b_outs, g_outs, g_ins, w_grads, masks;
};

Plan::Plan(const Layer& model, PlanOptions options)
    : options_(options), step_values_(options.device, options.seed ? options.seed : next_global_seed()),
      serial_(++plans_made) {
  if (options_.batch_size <= 0) throw std::invalid_argument("Plan: batch size must be positive");
  const Graph* graph = model.graph();
  if (!graph) throw std::invalid_argument("Plan: '" + model.name() + "' is not a model with a graph");
  std::vector<int> in_ids;
  shapes_from_layers_ = !options_.input_shapes.empty();
  if (shapes_from_layers_ && options_.input_shapes.size() != graph->inputs.size())
    throw ShapeError("Model '" + model.name() + "': " + std::to_string(options_.input_shapes.size()) +
                     " input shapes for " + std::to_string(graph->inputs.size()) + " inputs");
  for (std::size_t i = 0; i < graph->inputs.size(); ++i) {
    const SymbolicTensor& t = graph->inputs[i];
    const Shape& s = t.shape();
    if (s[0] >= 0 && s[0] != options_.batch_size)
      throw ShapeError("Model '" + model.name() + "': input '" + t.name() + "' has a fixed batch size of " +
                       std::to_string(s[0]) + ", got batches of " + std::to_string(options_.batch_size));
    Shape shape = s.with_batch(options_.batch_size);
    if (shapes_from_layers_) {
      const Shape& given = options_.input_shapes[i];
      bool fits = given.rank() == s.rank() && given[0] == options_.batch_size;
      for (int d = 1; fits && d < s.rank(); ++d) fits = given[d] > 0 && (s[d] < 0 || s[d] == given[d]);
      if (!fits)
        throw ShapeError("Model '" + model.name() + "': input '" + t.name() + "' of shape " + s.to_string() +
                         " cannot take a batch of shape " + given.to_string() + " (batches of " +
                         std::to_string(options_.batch_size) + ")");
      shape = given;
    } else {
      for (int d = 1; d < s.rank(); ++d)
        if (s[d] < 0)
          throw ShapeError("Model '" + model.name() + "': input '" + t.name() + "' has shape " + s.to_string() +
                           ", with sizes unknown until the data comes: its plan needs the batch's shapes "
                           "(PlanOptions::input_shapes, Model::plan_for(input_shapes, training))");
    }
    const int id = new_value(shape);
    values_[static_cast<std::size_t>(id)]->external = true;
    in_ids.push_back(id);
    input_shapes_.push_back(values_[static_cast<std::size_t>(id)]->shape);
  }
  input_ids_ = in_ids;
  inline_graph(*graph, in_ids, output_ids_, &output_mask_ids_);
  // A model's outputs get memory of their own: callers (a tape, the training loop) tell values apart by address,
  // so an output must not share its memory with an input or another output.
  for (int id : output_ids_) {
    Value& v = *values_[static_cast<std::size_t>(id)];
    if (v.view_of < 0) continue;
    v.view_of = -1;
    for (auto& st : steps_)
      if (st->view && st->out[0] == id) st->view = false;
  }

  const int S = static_cast<int>(steps_.size());
  const int end = 2 * S + 1;
  for (int s = 0; s < S; ++s) {
    for (int id : steps_[static_cast<std::size_t>(s)]->in) values_[static_cast<std::size_t>(id)]->use(s);
    for (int id : steps_[static_cast<std::size_t>(s)]->out) values_[static_cast<std::size_t>(id)]->use(s);
    for (int id : steps_[static_cast<std::size_t>(s)]->mask_in)
      if (id >= 0) values_[static_cast<std::size_t>(id)]->use(s);
  }
  for (int id : output_mask_ids_) {
    if (id < 0) continue;
    values_[static_cast<std::size_t>(id)]->use(0);
    values_[static_cast<std::size_t>(id)]->use(end);
  }
  for (int id : output_ids_) {
    values_[static_cast<std::size_t>(id)]->use(0);
    values_[static_cast<std::size_t>(id)]->use(end);
  }
  if (options_.backward) {
    trainable_ = model.trainable_weights();
    plan_backward();
  }
  // A view's uses are uses of the memory it shows.
  for (auto& v : values_)
    if (v->view_of >= 0 && v->last >= 0) {
      Value& source = *values_[static_cast<std::size_t>(v->view_of)];
      source.use(v->first);
      source.use(v->last);
    }
  assign_memory();
}

Plan::~Plan() = default;

int Plan::new_value(const Shape& shape) {
  auto v = std::make_unique<Value>();
  v->shape = shape;
  v->bytes = static_cast<std::size_t>(shape.numel()) * sizeof(float);
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

void Plan::inline_graph(const Graph& graph, const std::vector<int>& input_ids, std::vector<int>& output_ids,
                        std::vector<int>* output_mask_ids) {
  std::unordered_map<const Node*, std::vector<int>> ids;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) ids[graph.inputs[i].node()] = {input_ids[i]};
  for (const auto& node : graph.nodes) {
    if (ids.count(node.get())) continue;  // a bound input
    std::vector<int> in;
    for (const SymbolicTensor& t : node->inputs()) in.push_back(ids.at(t.node()).at(static_cast<std::size_t>(t.index())));
    if (const Graph* nested = node->layer()->graph()) {
      std::vector<int> out;
      inline_graph(*nested, in, out, nullptr);
      ids[node.get()] = out;
      continue;
    }
    auto step = std::make_unique<Step>();
    step->layer = node->layer().get();
    step->in = in;
    for (const SymbolicTensor& m : node->input_masks())
      step->mask_in.push_back(m.defined() ? ids.at(m.node()).at(static_cast<std::size_t>(m.index())) : -1);
    step->computes_mask = node->computes_mask();
    std::vector<Shape> in_shapes;
    for (int id : in) in_shapes.push_back(values_[static_cast<std::size_t>(id)]->shape);
    if (shapes_from_layers_) {
      for (const Shape& s : step->layer->compute_output_shape(in_shapes)) {
        for (Index d : s.dims())
          if (d < 0)
            throw ShapeError(step->layer->where() + "gives an output of shape " + s.to_string() +
                             " for inputs of known shapes");
        step->out.push_back(new_value(s));
      }
    } else {
      for (const Shape& s : node->output_shapes()) step->out.push_back(new_value(s.with_batch(options_.batch_size)));
    }
    if (in.size() == 1 && step->out.size() == 1 && step->layer->output_is_view_of_input(in_shapes)) {
      Value& out = *values_[static_cast<std::size_t>(step->out[0])];
      const Value& source = *values_[static_cast<std::size_t>(in[0])];
      if (out.shape.numel() != source.shape.numel())
        throw std::logic_error(step->layer->where() + "declares its output a view of its input, but " +
                               out.shape.to_string() + " and " + source.shape.to_string() + " differ in size");
      out.view_of = source.view_of >= 0 ? source.view_of : in[0];
      step->view = true;
    }
    ids[node.get()] = step->out;
    steps_.push_back(std::move(step));
  }
  for (const SymbolicTensor& t : graph.outputs) output_ids.push_back(ids.at(t.node()).at(static_cast<std::size_t>(t.index())));
  if (output_mask_ids)
    for (const SymbolicTensor& t : graph.outputs) {
      const SymbolicTensor m = t.mask();
      output_mask_ids->push_back(m.defined() ? ids.at(m.node()).at(static_cast<std::size_t>(m.index())) : -1);
    }
}

void Plan::plan_backward() {
  const int S = static_cast<int>(steps_.size());
  const int end = 2 * S + 1;
  std::unordered_map<const Variable*, int> weight_index;
  for (std::size_t k = 0; k < trainable_.size(); ++k) weight_index[trainable_[k].get()] = static_cast<int>(k);

  std::vector<bool> requires_grad(values_.size(), false), available(values_.size(), false);
  if (options_.input_gradients)
    for (int id : input_ids_) requires_grad[static_cast<std::size_t>(id)] = true;
  std::vector<bool> has_weights(static_cast<std::size_t>(S), false);
  for (int s = 0; s < S; ++s) {
    Step& st = *steps_[static_cast<std::size_t>(s)];
    for (const VariablePtr& v : st.layer->trainable_weights())
      if (weight_index.count(v.get())) has_weights[static_cast<std::size_t>(s)] = true;
    bool rg = has_weights[static_cast<std::size_t>(s)];
    for (int id : st.in) rg = rg || requires_grad[static_cast<std::size_t>(id)];
    for (int id : st.out) requires_grad[static_cast<std::size_t>(id)] = rg && !st.computes_mask;
  }
  for (int id : output_ids_) available[static_cast<std::size_t>(id)] = requires_grad[static_cast<std::size_t>(id)];
  for (int s = S - 1; s >= 0; --s) {
    Step& st = *steps_[static_cast<std::size_t>(s)];
    bool wants = has_weights[static_cast<std::size_t>(s)];
    for (int id : st.in) wants = wants || requires_grad[static_cast<std::size_t>(id)];
    bool gets = false;
    for (int id : st.out) gets = gets || available[static_cast<std::size_t>(id)];
    st.run_backward = wants && gets;
    if (st.run_backward)
      for (int id : st.in)
        if (requires_grad[static_cast<std::size_t>(id)]) available[static_cast<std::size_t>(id)] = true;
  }

  std::vector<int> grad_of(values_.size(), -1);
  for (int id : output_ids_) {
    const int g = new_value(values_[static_cast<std::size_t>(id)]->shape);
    values_[static_cast<std::size_t>(g)]->use(0);
    values_[static_cast<std::size_t>(g)]->use(end);
    output_grad_ids_.push_back(g);
    if (requires_grad[static_cast<std::size_t>(id)]) grad_of[static_cast<std::size_t>(id)] = g;
  }
  // A gradient buffer is "written" once something has put a value in it: the caller for output gradients,
  // the first step (in backward order) for the rest. Later writers accumulate through a temporary.
  std::vector<bool> written(values_.size(), false);
  for (int id : output_ids_) written[static_cast<std::size_t>(id)] = true;
  std::vector<bool> weight_written(trainable_.size(), false);
  std::vector<int> final_writer(trainable_.size(), -1);  // the last step of backward that writes weight k
  // Model inputs get their gradient buffers first, so a gradient no step writes stays zero there.
  if (options_.input_gradients)
    for (int id : input_ids_) {
      const int g = new_value(values_[static_cast<std::size_t>(id)]->shape);
      values_[static_cast<std::size_t>(g)]->zero = true;
      values_[static_cast<std::size_t>(g)]->use(0);
      values_[static_cast<std::size_t>(g)]->use(end);
      input_grad_ids_.push_back(g);
      grad_of[static_cast<std::size_t>(id)] = g;
    }
  for (int s = S - 1; s >= 0; --s) {
    Step& st = *steps_[static_cast<std::size_t>(s)];
    if (!st.run_backward) continue;
    const int tb = 2 * S - 1 - s;
    for (int id : st.out) {
      int g = grad_of[static_cast<std::size_t>(id)];
      if (g < 0) {  // an output no one differentiates: its gradient is zero
        g = new_value(values_[static_cast<std::size_t>(id)]->shape);
        values_[static_cast<std::size_t>(g)]->zero = true;
        values_[static_cast<std::size_t>(g)]->use(0);
        values_[static_cast<std::size_t>(g)]->use(end);
        grad_of[static_cast<std::size_t>(id)] = g;
      }
      values_[static_cast<std::size_t>(g)]->use(tb);
      st.grad_out.push_back(g);
    }
    for (int id : st.in) {
      if (!requires_grad[static_cast<std::size_t>(id)]) {
        st.grad_in.push_back(-1);
        continue;
      }
      const Shape& shape = values_[static_cast<std::size_t>(id)]->shape;
      int& g = grad_of[static_cast<std::size_t>(id)];
      if (g < 0) g = new_value(shape);
      values_[static_cast<std::size_t>(g)]->use(tb);
      if (!written[static_cast<std::size_t>(id)]) {
        written[static_cast<std::size_t>(id)] = true;
        st.grad_in.push_back(g);
      } else {
        const int tmp = new_value(shape);
        values_[static_cast<std::size_t>(tmp)]->use(tb);
        st.grad_in.push_back(tmp);
        st.accumulate.push_back({g, tmp});
      }
    }
    for (const VariablePtr& v : st.layer->trainable_weights()) {
      auto it = weight_index.find(v.get());
      if (it == weight_index.end()) {  // trainable in the layer, frozen in the model: computed and dropped
        const int tmp = new_value(v->value.shape());
        values_[static_cast<std::size_t>(tmp)]->use(tb);
        st.weight_grad.push_back(tmp);
        continue;
      }
      const int k = it->second;
      final_writer[static_cast<std::size_t>(k)] = s;
      if (!weight_written[static_cast<std::size_t>(k)]) {
        weight_written[static_cast<std::size_t>(k)] = true;
        st.weight_grad.push_back(-1 - k);
      } else {
        const int tmp = new_value(v->value.shape());
        values_[static_cast<std::size_t>(tmp)]->use(tb);
        st.weight_grad.push_back(tmp);
        st.accumulate.push_back({-1 - k, tmp});
      }
    }
    if (st.layer->backward_needs_inputs())
      for (int id : st.in) values_[static_cast<std::size_t>(id)]->use(tb);
    for (int id : st.mask_in)
      if (id >= 0) values_[static_cast<std::size_t>(id)]->use(tb);
    if (st.layer->backward_needs_outputs())
      for (int id : st.out) values_[static_cast<std::size_t>(id)]->use(tb);
  }

  for (std::size_t k = 0; k < trainable_.size(); ++k) {
    const int s = final_writer[k];
    if (s < 0)
      ready_before_backward_.push_back(static_cast<int>(k));
    else
      steps_[static_cast<std::size_t>(s)]->gradients_ready.push_back(static_cast<int>(k));
  }

  std::vector<Shape> shapes;
  for (const VariablePtr& v : trainable_) shapes.push_back(v->value.shape());
  PackedBuffers grads = pack_buffers(shapes, options_.device, true);
  flat_grads_ = std::move(grads.flat);
  weight_grads_ = std::move(grads.views);
}

void Plan::assign_memory() {
  // Greedy by size: each buffer, largest first, goes to the lowest offset free for its whole lifetime.
  std::vector<Value*> order;
  for (auto& v : values_)
    if (!v->external && v->view_of < 0 && v->last >= 0) order.push_back(v.get());
  std::stable_sort(order.begin(), order.end(), [](const Value* a, const Value* b) { return a->bytes > b->bytes; });
  std::vector<const Value*> placed;
  for (Value* v : order) {
    const std::size_t size = aligned(std::max<std::size_t>(v->bytes, 1));
    unshared_bytes_ += size;
    std::vector<std::pair<std::size_t, std::size_t>> busy;
    for (const Value* p : placed)
      if (p->first <= v->last && v->first <= p->last) busy.emplace_back(p->offset, p->offset + aligned(std::max<std::size_t>(p->bytes, 1)));
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;
      offset = std::max(offset, e);
    }
    v->offset = offset;
    arena_bytes_ = std::max(arena_bytes_, offset + size);
    placed.push_back(v);
  }
  arena_ = std::make_shared<Storage>(std::max<std::size_t>(arena_bytes_, kAlign), options_.device);
  for (Value* v : order) {
    v->tensor = Tensor(arena_, v->offset, v->shape, DType::float32);
    require_aligned(v->tensor, "Plan: an arena buffer of shape " + v->shape.to_string());
    if (v->zero) v->tensor.zero();
  }
  for (auto& v : values_)  // views of model inputs are bound with them, in set_input
    if (v->view_of >= 0 && !values_[static_cast<std::size_t>(v->view_of)]->external)
      v->tensor = values_[static_cast<std::size_t>(v->view_of)]->tensor.reshape(v->shape);

  for (auto& st : steps_) {
    for (int id : st->in) st->ins.push_back(values_[static_cast<std::size_t>(id)]->tensor);
    for (int id : st->out) st->outs.push_back(values_[static_cast<std::size_t>(id)]->tensor);
    for (int id : st->mask_in) st->masks.push_back(id < 0 ? Tensor() : values_[static_cast<std::size_t>(id)]->tensor);
    if (!st->run_backward) continue;
    st->b_ins = st->layer->backward_needs_inputs() ? st->ins : std::vector<Tensor>(st->ins.size());
    st->b_outs = st->layer->backward_needs_outputs() ? st->outs : std::vector<Tensor>(st->outs.size());
    for (int id : st->grad_out) st->g_outs.push_back(values_[static_cast<std::size_t>(id)]->tensor);
    for (int id : st->grad_in) st->g_ins.push_back(id < 0 ? Tensor() : values_[static_cast<std::size_t>(id)]->tensor);
    for (int id : st->weight_grad)
      st->w_grads.push_back(id < 0 ? weight_grads_[static_cast<std::size_t>(-1 - id)] : values_[static_cast<std::size_t>(id)]->tensor);
  }
}

Tensor& Plan::value_tensor(int id) { return values_[static_cast<std::size_t>(id)]->tensor; }

const Shape& Plan::input_shape(int i) const { return input_shapes_.at(static_cast<std::size_t>(i)); }

void Plan::set_input(int i, const Tensor& x) {
  if (i < 0 || i >= num_inputs()) throw std::out_of_range("Plan::set_input: no input " + std::to_string(i));
  const Shape& want = input_shapes_[static_cast<std::size_t>(i)];
  if (x.shape() != want || x.dtype() != DType::float32)
    throw ShapeError("input " + std::to_string(i) + ": expected a float32 tensor of shape " + want.to_string() +
                     ", got " + dtype_name(x.dtype()) + " " + x.shape().to_string());
  if (x.device() != options_.device)
    throw ShapeError("input " + std::to_string(i) + " is on " + x.device().to_string() + ", the plan runs on " +
                     options_.device.to_string());
  const int id = input_ids_[static_cast<std::size_t>(i)];
  values_[static_cast<std::size_t>(id)]->tensor = x;
  // The input and its views, wherever steps read or write them.
  const auto bound = [&](int v) -> const Tensor* {
    const Value& value = *values_[static_cast<std::size_t>(v)];
    return v == id || value.view_of == id ? &value.tensor : nullptr;
  };
  for (auto& v : values_)
    if (v->view_of == id) v->tensor = x.reshape(v->shape);
  for (auto& st : steps_) {
    for (std::size_t k = 0; k < st->in.size(); ++k)
      if (const Tensor* t = bound(st->in[k])) {
        st->ins[k] = *t;
        if (st->run_backward && st->layer->backward_needs_inputs()) st->b_ins[k] = *t;
      }
    for (std::size_t k = 0; k < st->mask_in.size(); ++k)
      if (const Tensor* t = st->mask_in[k] >= 0 ? bound(st->mask_in[k]) : nullptr) st->masks[k] = *t;
    for (std::size_t k = 0; k < st->out.size(); ++k)
      if (const Tensor* t = bound(st->out[k])) {
        st->outs[k] = *t;
        if (st->run_backward && st->layer->backward_needs_outputs()) st->b_outs[k] = *t;
      }
  }
}

void Plan::require_inputs_bound() const {
  for (std::size_t i = 0; i < input_ids_.size(); ++i)
    if (!values_[static_cast<std::size_t>(input_ids_[i])]->tensor.defined())
      throw std::logic_error("Plan::forward: input " + std::to_string(i) + " is not bound (set_input)");
}

void Plan::forward() {
  require_inputs_bound();
  refresh_step_values();
  run_forward();
}

void Plan::run_forward() {
  require_inputs_bound();
  for (auto& st : steps_) {
    if (st->view) continue;
    ForwardContext ctx;
    ctx.inputs = st->ins;
    ctx.outputs = st->outs;
    ctx.masks = st->masks;
    ctx.training = options_.training;
    ctx.state = &st->state;
    ctx.step_values = &step_values_;
    ctx.replica = options_.replica;
    st->layer->forward(ctx);
  }
  forward_done_ = true;
}

const Tensor& Plan::output(int i) const {
  return values_[static_cast<std::size_t>(output_ids_.at(static_cast<std::size_t>(i)))]->tensor;
}

const Tensor& Plan::output_mask(int i) const {
  static const Tensor none;
  const int id = output_mask_ids_.at(static_cast<std::size_t>(i));
  return id < 0 ? none : values_[static_cast<std::size_t>(id)]->tensor;
}

Tensor& Plan::output_grad(int i) {
  if (!options_.backward) throw std::logic_error("Plan::output_grad: the plan was compiled without backward");
  return value_tensor(output_grad_ids_.at(static_cast<std::size_t>(i)));
}

bool Plan::output_is_fusable_softmax(int i) const {
  const int id = output_ids_.at(static_cast<std::size_t>(i));
  const Step* producer = nullptr;
  int consumers = 0;
  for (const auto& st : steps_) {
    for (int in : st->in) consumers += in == id;
    for (int in : st->mask_in) consumers += in == id;
    for (int out : st->out)
      if (out == id) producer = st.get();
  }
  return producer && consumers == 0 && producer->out.size() == 1 && producer->layer->softmax_output();
}

void Plan::set_output_grad_is_logits(int i, bool value) {
  if (value && !output_is_fusable_softmax(i))
    throw std::logic_error("Plan: output " + std::to_string(i) + " does not end in a fusable softmax");
  const int id = output_ids_.at(static_cast<std::size_t>(i));
  for (auto& st : steps_)
    for (int out : st->out)
      if (out == id) st->output_grad_is_logits = value;
}

const Tensor& Plan::input_grad(int i) const {
  if (!options_.input_gradients) throw std::logic_error("Plan::input_grad: the plan was compiled without input_gradients");
  return values_[static_cast<std::size_t>(input_grad_ids_.at(static_cast<std::size_t>(i)))]->tensor;
}

void Plan::backward() {
  if (!options_.backward) throw std::logic_error("Plan::backward: the plan was compiled without backward");
  if (!forward_done_) throw std::logic_error("Plan::backward: forward() has not run");
  backend::Backend& be = backend::get(options_.device);
  if (gradient_ready_)
    for (int k : ready_before_backward_) gradient_ready_(k);
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    Step& st = **it;
    if (!st.run_backward) continue;
    BackwardContext ctx;
    ctx.inputs = st.b_ins;
    ctx.outputs = st.b_outs;
    ctx.grad_outputs = st.g_outs;
    ctx.grad_inputs = st.g_ins;
    ctx.weight_grads = st.w_grads;
    ctx.masks = st.masks;
    ctx.training = options_.training;
    ctx.output_grad_is_logits = st.output_grad_is_logits;
    ctx.state = &st.state;
    ctx.replica = options_.replica;
    st.layer->backward(ctx);
    for (const Accumulate& a : st.accumulate) {
      Tensor& target = a.target >= 0 ? value_tensor(a.target) : weight_grads_[static_cast<std::size_t>(-1 - a.target)];
      const Tensor& source = value_tensor(a.source);
      be.add(target.data<float>(), source.data<float>(), target.data<float>(), target.numel());
    }
    if (gradient_ready_)
      for (int k : st.gradients_ready) gradient_ready_(k);
  }
}

}  // namespace tower
