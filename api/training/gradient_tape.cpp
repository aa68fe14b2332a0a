#include "api/training/gradient_tape.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "api/backend/backend.h"
#include "api/losses/device_doubles.h"
#include "api/models/model.h"
#include "api/ops/recorder.h"
#include "api/training/training_loop.h"

namespace tower {

namespace {

enum class Op { model, add, subtract, multiply, scale, square, sum, l2_loss, loss, recorded };

std::string where(const char* op) { return std::string("GradientTape.") + op + "(): "; }

backend::Backend& be(const Tensor& t) { return backend::get(t.device()); }

void require_float32(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(where(op) + what + " is an undefined tensor");
  if (t.dtype() != DType::float32)
    throw std::invalid_argument(where(op) + what + " must be float32, got " + dtype_name(t.dtype()) + " " +
                                t.shape().to_string());
}

// `s` (one element) repeated to `shape`, on s's device.
Tensor broadcast(const Tensor& s, const Shape& shape) {
  Tensor y(shape, DType::float32, s.device());
  be(s).fill(y.data<float>(), y.numel(), 0.f);
  be(s).add_bias(y.data<float>(), s.data<float>(), y.numel(), 1);
  return y;
}

Tensor full_shape(const Tensor& t, const Shape& shape) { return t.shape() == shape ? t : broadcast(t, shape); }

Tensor sum_of(const Tensor& t) {
  Tensor y(Shape{1}, DType::float32, t.device());
  be(t).sum(t.data<float>(), y.data<float>(), t.numel());
  return y;
}

Tensor scaled(const Tensor& t, double factor) {
  Tensor y(t.shape(), DType::float32, t.device());
  be(t).axpby(static_cast<float>(factor), t.data<float>(), 0.f, y.data<float>(), t.numel());
  return y;
}

Tensor product(const Tensor& a, const Tensor& b) {
  Tensor y(a.shape(), DType::float32, a.device());
  be(a).mul(a.data<float>(), b.data<float>(), y.data<float>(), a.numel());
  return y;
}

}  // namespace

struct GradientTape::Value {
  Tensor tensor;
  int producer = -1;     // node index, -1 for a watched variable
  int output_index = 0;  // which output of a model call
  int uses = 0;
  VariablePtr variable;  // set for a watched variable
};

struct GradientTape::Node {
  virtual ~Node() = default;
  Op op = Op::add;
  std::vector<int> inputs;        // value ids, -1 for constants
  std::vector<Tensor> operands;   // as the op read them
  int output = -1;                // value id (the first output of a model call)
  double factor = 1.0;
  // Loss nodes.
  losses::LossPtr loss;
  Tensor y_true, scale;  // scale: the weight of each per-example value in the result
  LossReduction reduction = LossReduction::sum_over_batch_size;
  // An op of tower::ops (Op::recorded): its inputs' gradients from its output's.
  std::function<std::vector<Tensor>(const Tensor&)> backward;
};

struct GradientTape::ModelCall : Node {
  Plan* plan = nullptr;
  std::vector<Tensor> given;  // the inputs as the caller gave them
  std::vector<int> outputs;
  std::vector<bool> logits_written;  // a fused loss wrote output i's gradient through the softmax
  std::vector<bool> written;          // output_grad(i) holds output i's whole gradient
};

// Per value: its gradient so far (undefined: none) and whether that is exactly the target's seed of 1, so the ops
// that scale by it can skip the product.
struct GradientTape::Grads {
  std::vector<Tensor> g;
  std::vector<bool> one;
  void add(int v, const Tensor& contribution, bool is_one = false) {
    if (v < 0) return;
    const auto i = static_cast<std::size_t>(v);
    if (!g[i].defined()) {
      g[i] = contribution;
      one[i] = is_one;
      return;
    }
    Tensor sum(g[i].shape(), DType::float32, g[i].device());
    be(sum).add(g[i].data<float>(), contribution.data<float>(), sum.data<float>(), sum.numel());
    g[i] = sum;
    one[i] = false;
  }
};

GradientTape::GradientTape(bool persistent)
    : persistent_(persistent), scope_(std::make_unique<ops::RecordingScope>(*this)) {}
GradientTape::~GradientTape() = default;

void GradientTape::check_recording(const char* op) const {
  if (gradient_done_ && !persistent_)
    throw std::logic_error(where(op) + "this tape's gradient() has run and released it; record a new tape");
}

int GradientTape::value_of(const Tensor& t) {
  if (!t.defined()) return -1;
  const auto it = by_address_.find(t.raw_data());
  if (it == by_address_.end()) return -1;
  const Value& v = values_[static_cast<std::size_t>(it->second)];
  if (v.tensor.shape() != t.shape())
    throw std::invalid_argument("GradientTape: an operand of shape " + t.shape().to_string() +
                                " shares its memory with a value of the tape of shape " +
                                v.tensor.shape().to_string() + "; pass the tape's value itself");
  return it->second;
}

int GradientTape::add_value(Tensor t, int producer, const VariablePtr& variable) {
  const int id = static_cast<int>(values_.size());
  by_address_[t.raw_data()] = id;
  values_.push_back(Value{std::move(t), producer, 0, 0, variable});
  return id;
}

int GradientTape::record(std::unique_ptr<Node> node) {
  for (int v : node->inputs)
    if (v >= 0) ++values_[static_cast<std::size_t>(v)].uses;
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

const Tensor& GradientTape::watch(const VariablePtr& variable) {
  if (!variable) throw std::invalid_argument("GradientTape.watch(): a null variable");
  auto it = variable_values_.find(variable.get());
  if (it == variable_values_.end()) {
    require_float32("watch", variable->value, ("variable '" + variable->path + "'").c_str());
    it = variable_values_.emplace(variable.get(), add_value(variable->value, -1, variable)).first;
  }
  return values_[static_cast<std::size_t>(it->second)].tensor;
}

const Tensor& GradientTape::watch(const Tensor& tensor) {
  require_float32("watch", tensor, "the tensor");
  const int v = value_of(tensor);
  return values_[static_cast<std::size_t>(v >= 0 ? v : add_value(tensor, -1))].tensor;
}

// An op of tower::ops run while this tape is open: recorded when an input is one of the tape's values (else its
// output is a constant, as TensorFlow's tape ignores ops on unwatched tensors).
void GradientTape::record(const ops::Record& r) {
  if (gradient_done_ && !persistent_) return;
  std::vector<int> ids;
  bool any = false;
  for (const Tensor& t : r.inputs) {
    ids.push_back(value_of(t));
    any = any || ids.back() >= 0;
  }
  if (!any) return;
  auto node = std::make_unique<Node>();
  node->op = Op::recorded;
  node->inputs = std::move(ids);
  node->operands = r.inputs;
  node->backward = r.backward;
  node->output = add_value(r.output, static_cast<int>(nodes_.size()));
  record(std::move(node));
}

// ---- model calls ----

std::vector<Tensor> GradientTape::call(Plan& plan, const std::vector<Tensor>& inputs) {
  check_recording("call");
  if (!plan.options().backward)
    throw std::invalid_argument(where("call") + "the plan was made without backward; a tape needs a training plan");
  if (std::find(called_plans_.begin(), called_plans_.end(), &plan) != called_plans_.end())
    throw std::logic_error(where("call") + "this plan (batch of " + std::to_string(plan.batch_size()) +
                           ") already ran on this tape, and its buffers hold one call's activations; call the model "
                           "instead (each call gets a plan of its own), or give each call its own plan");
  if (static_cast<int>(inputs.size()) != plan.num_inputs())
    throw std::invalid_argument(where("call") + std::to_string(inputs.size()) + " inputs for a model of " +
                                std::to_string(plan.num_inputs()));
  const Device device = plan.options().device;
  std::vector<Tensor> staged;
  std::vector<int> input_ids;
  for (int i = 0; i < plan.num_inputs(); ++i) {
    Tensor x = inputs[static_cast<std::size_t>(i)];
    if (!x.defined()) throw std::invalid_argument(where("call") + "input " + std::to_string(i) + " is an undefined tensor");
    input_ids.push_back(plan.options().input_gradients ? value_of(x) : -1);
    if (x.dtype() != DType::float32) {
      // Converted on the host, as fit stages such inputs.
      Tensor converted, host;
      detail::Landing unused;
      detail::stage_float32(x, converted, Device::cpu(), host, unused);
      x = converted;
    }
    staged.push_back(x.device() == device ? x : x.to(device));
    plan.set_input(i, staged.back());
  }
  plan.forward();
  called_plans_.push_back(&plan);
  for (const VariablePtr& v : plan.trainable_weights()) watch(v);

  auto node = std::make_unique<ModelCall>();
  node->op = Op::model;
  node->plan = &plan;
  node->inputs = std::move(input_ids);
  node->operands = std::move(staged);  // the plan reads them until its backward has run
  node->given = inputs;                // an input's gradient goes back to its device
  const int index = static_cast<int>(nodes_.size());
  std::vector<Tensor> out;
  for (int i = 0; i < plan.num_outputs(); ++i) {
    const int id = add_value(plan.output(i), index);
    values_[static_cast<std::size_t>(id)].output_index = i;
    node->outputs.push_back(id);
    out.push_back(plan.output(i));
  }
  node->output = node->outputs.front();
  node->logits_written.assign(node->outputs.size(), false);
  node->written.assign(node->outputs.size(), false);
  record(std::move(node));
  return out;
}

std::vector<Tensor> GradientTape::call(ModelImpl& model, const std::vector<Tensor>& inputs) {
  if (inputs.empty() || !inputs[0].defined() || inputs[0].rank() == 0)
    throw std::invalid_argument(where("call") + "model '" + model.name() + "' needs batched inputs [N, ...]");
  try {
    check_recording("call");
    // Inputs that are values of this tape (watched, or computed on it) receive gradients: the plan computes them.
    bool input_gradients = false;
    for (const Tensor& x : inputs) input_gradients = input_gradients || value_of(x) >= 0;
    const Index n = inputs[0].dim(0);
    int& calls = model_calls_[{&model, n}];
    Plan& plan = model.tape_plan(n, calls, input_gradients);
    std::vector<Tensor> out = call(plan, inputs);
    ++calls;
    return out;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("Model '" + model.name() + "': " + e.what());
  } catch (const std::logic_error& e) {
    throw std::logic_error("Model '" + model.name() + "': " + e.what());
  }
}

Tensor GradientTape::call(ModelImpl& model, const Tensor& x) {
  std::vector<Tensor> out = call(model, std::vector<Tensor>{x});
  if (out.size() != 1)
    throw std::invalid_argument(where("call") + "model '" + model.name() + "' has " + std::to_string(out.size()) +
                                " outputs; call it with a list of inputs to get them all");
  return out[0];
}

Tensor GradientTape::call(const Model& model, const Tensor& x) { return call(model.impl(), x); }

std::vector<Tensor> GradientTape::call(const Model& model, const std::vector<Tensor>& inputs) {
  return call(model.impl(), inputs);
}

// ---- ops ----

Tensor GradientTape::binary(const char* op_name, const Tensor& a, const Tensor& b) {
  check_recording(op_name);
  require_float32(op_name, a, "the first operand");
  require_float32(op_name, b, "the second operand");
  if (a.device() != b.device())
    throw std::invalid_argument(where(op_name) + "operands on " + a.device().to_string() + " and " +
                                b.device().to_string());
  if (a.shape() != b.shape() && a.numel() != 1 && b.numel() != 1)
    throw std::invalid_argument(where(op_name) + "shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                                " do not broadcast (equal shapes, or one operand of one element)");
  const Shape shape = a.numel() == 1 && b.numel() != 1 ? b.shape() : a.shape();
  const Tensor fa = full_shape(a, shape), fb = full_shape(b, shape);
  Tensor y(shape, DType::float32, a.device());
  auto node = std::make_unique<Node>();
  const std::string name = op_name;
  backend::Backend& backend = be(a);
  if (name == "add") {
    node->op = Op::add;
    backend.add(fa.data<float>(), fb.data<float>(), y.data<float>(), y.numel());
  } else if (name == "subtract") {
    node->op = Op::subtract;
    backend.sub(fa.data<float>(), fb.data<float>(), y.data<float>(), y.numel());
  } else {
    node->op = Op::multiply;
    backend.mul(fa.data<float>(), fb.data<float>(), y.data<float>(), y.numel());
  }
  node->inputs = {value_of(a), value_of(b)};
  node->operands = {a, b};
  const int index = static_cast<int>(nodes_.size());
  node->output = add_value(y, index);
  record(std::move(node));
  return y;
}

Tensor GradientTape::add(const Tensor& a, const Tensor& b) { return binary("add", a, b); }
Tensor GradientTape::subtract(const Tensor& a, const Tensor& b) { return binary("subtract", a, b); }
Tensor GradientTape::multiply(const Tensor& a, const Tensor& b) { return binary("multiply", a, b); }

Tensor GradientTape::unary(const char* op_name, const Tensor& a, double factor) {
  check_recording(op_name);
  require_float32(op_name, a, "the operand");
  const std::string name = op_name;
  auto node = std::make_unique<Node>();
  node->inputs = {value_of(a)};
  node->operands = {a};
  node->factor = factor;
  Tensor y;
  if (name == "scale") {
    node->op = Op::scale;
    y = scaled(a, factor);
  } else if (name == "square") {
    node->op = Op::square;
    y = product(a, a);
  } else if (name == "sum") {
    node->op = Op::sum;
    y = sum_of(a);
    if (factor != 1.0) be(y).axpby(static_cast<float>(factor), y.data<float>(), 0.f, y.data<float>(), 1);
  } else {
    node->op = Op::l2_loss;
    y = sum_of(product(a, a));
    be(y).axpby(0.5f, y.data<float>(), 0.f, y.data<float>(), 1);
  }
  const int index = static_cast<int>(nodes_.size());
  node->output = add_value(y, index);
  record(std::move(node));
  return y;
}

Tensor GradientTape::scale(const Tensor& a, double factor) { return unary("scale", a, factor); }

Tensor GradientTape::divide(const Tensor& a, double divisor) {
  if (divisor == 0.0) throw std::invalid_argument(where("divide") + "division by zero");
  return unary("scale", a, 1.0 / divisor);
}

Tensor GradientTape::square(const Tensor& a) { return unary("square", a, 1.0); }
Tensor GradientTape::sum(const Tensor& a) { return unary("sum", a, 1.0); }

Tensor GradientTape::mean(const Tensor& a) {
  if (a.defined() && a.numel() == 0) throw std::invalid_argument(where("mean") + "the mean of an empty tensor");
  return unary("sum", a, a.defined() ? 1.0 / static_cast<double>(a.numel()) : 1.0);
}

Tensor GradientTape::l2_loss(const Tensor& a) { return unary("l2_loss", a, 1.0); }
Tensor GradientTape::l2_loss(const VariablePtr& variable) { return l2_loss(watch(variable)); }

Tensor GradientTape::loss(const losses::LossPtr& loss_object, const Tensor& y_true, const Tensor& y_pred,
                          const TapeLossOptions& options) {
  check_recording("loss");
  if (!loss_object) throw std::invalid_argument(where("loss") + "a null loss");
  const std::string who = where("loss") + loss_object->name() + ": ";
  require_float32("loss", y_pred, "y_pred");
  if (!y_true.defined()) throw std::invalid_argument(who + "y_true is an undefined tensor");
  if (y_pred.rank() == 0) throw std::invalid_argument(who + "y_pred must be batched, got a scalar");
  loss_object->check_shapes(y_true.shape(), y_pred.shape());
  const Device device = y_pred.device();
  backend::Backend& backend = backend::get(device);
  auto node = std::make_unique<Node>();
  node->op = Op::loss;
  node->loss = loss_object;
  node->reduction = options.reduction;
  node->y_true = y_true.device() == device ? y_true : y_true.to(device);
  node->inputs = {value_of(y_pred)};
  node->operands = {y_pred};

  const Index examples = y_pred.dim(0);
  Tensor per_example(loss_object->per_example_shape(y_pred.shape()), DType::float32, device);
  loss_object->forward(node->y_true, y_pred, per_example);
  const Index values = per_example.numel(), per = values / std::max<Index>(examples, 1);
  if (options.global_batch_size != 0 && options.global_batch_size < examples)
    throw std::invalid_argument(who + "global_batch_size " + std::to_string(options.global_batch_size) +
                                " is smaller than this batch of " + std::to_string(examples));
  const Index batch = options.global_batch_size > 0 ? options.global_batch_size : examples;
  const double k = options.reduction == LossReduction::sum_over_batch_size
                       ? 1.0 / static_cast<double>(std::max<Index>(batch * per, 1))
                       : 1.0;
  node->scale = Tensor(per_example.shape(), DType::float32, device);
  if (options.sample_weight.defined()) {
    if (options.sample_weight.numel() != examples || options.sample_weight.dtype() != DType::float32)
      throw std::invalid_argument(who + "sample weights of shape " + options.sample_weight.shape().to_string() +
                                  " for a batch of " + std::to_string(examples) + " (float32 [N] expected)");
    const Tensor sw = options.sample_weight.device() == device ? options.sample_weight
                                                               : options.sample_weight.to(device);
    node->operands.push_back(sw);
    losses::detail::DeviceDoubles w(examples, device);
    backend.example_weights({.examples = examples, .sample_weight = losses::detail::any_values(sw)}, w.data());
    backend.loss_scale(w.data(), values, per, k, node->scale.data<float>());
  } else {
    backend.fill(node->scale.data<float>(), values, static_cast<float>(k));
  }
  Tensor weighted = product(per_example, node->scale);
  Tensor y = options.reduction == LossReduction::none ? weighted : sum_of(weighted);
  const int index = static_cast<int>(nodes_.size());
  node->output = add_value(y, index);
  record(std::move(node));
  return y;
}

// ---- gradients ----

void GradientTape::backward_loss(const Node& node, const Tensor& g, Grads& grads) {
  const int pred = node.inputs[0];
  if (pred < 0) return;
  const Tensor& y_pred = node.operands[0];
  const bool is_one = grads.one[static_cast<std::size_t>(node.output)];
  // The weight of each per-example value in d target: scale times the incoming gradient.
  Tensor scale = node.scale;
  if (!is_one) scale = product(node.scale, node.reduction == LossReduction::none ? g : broadcast(g, node.scale.shape()));
  // A model output used by this loss alone takes the gradient in the plan's own buffer, through the softmax
  // when the model ends in one and the loss can fuse it.
  const Value& v = values_[static_cast<std::size_t>(pred)];
  if (v.producer >= 0 && v.uses == 1 && nodes_[static_cast<std::size_t>(v.producer)]->op == Op::model &&
      !grads.g[static_cast<std::size_t>(pred)].defined()) {
    auto& call = static_cast<ModelCall&>(*nodes_[static_cast<std::size_t>(v.producer)]);
    const int i = v.output_index;
    Tensor& dest = call.plan->output_grad(i);
    if (node.loss->can_fuse_softmax() && call.plan->output_is_fusable_softmax(i)) {
      node.loss->backward_through_softmax(node.y_true, y_pred, scale, dest);
      call.logits_written[static_cast<std::size_t>(i)] = true;
    } else {
      node.loss->backward(node.y_true, y_pred, scale, dest);
    }
    call.written[static_cast<std::size_t>(i)] = true;
    return;
  }
  Tensor dy(y_pred.shape(), DType::float32, y_pred.device());
  node.loss->backward(node.y_true, y_pred, scale, dy);
  grads.add(pred, dy);
}

void GradientTape::backward_model(const ModelCall& call, Grads& grads) {
  Plan& plan = *call.plan;
  bool any = false;
  for (std::size_t i = 0; i < call.outputs.size(); ++i) {
    const int o = static_cast<int>(i);
    const Tensor& g = grads.g[static_cast<std::size_t>(call.outputs[i])];
    plan.set_output_grad_is_logits(o, call.logits_written[i]);
    if (call.written[i]) {
      any = true;
    } else if (g.defined()) {
      any = true;
      plan.output_grad(o).copy_from(g);
    } else {
      plan.output_grad(o).zero();
    }
  }
  if (!any) return;
  plan.backward();
  // Inputs that are values of this tape get the plan's input gradients, copied (the next backward of this plan
  // overwrites them) onto the device the input lives on.
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    if (call.inputs[i] < 0) continue;
    const Tensor& given = call.given[i];
    const Tensor& g = plan.input_grad(static_cast<int>(i));
    grads.add(call.inputs[i], g.device() == given.device() ? g.clone() : g.to(given.device()));
  }
}

void GradientTape::backward_node(const Node& node, Grads& grads) {
  const auto out = static_cast<std::size_t>(node.output);
  const Tensor& g = grads.g[out];
  if (!g.defined()) return;
  const bool one = grads.one[out];
  if (node.op == Op::loss) return backward_loss(node, g, grads);
  if (node.op == Op::recorded) {
    std::vector<bool> needed(node.inputs.size());
    for (std::size_t k = 0; k < needed.size(); ++k) needed[k] = node.inputs[k] >= 0;  // constants need none
    const ops::NeededInputs marks(&needed);
    const std::vector<Tensor> inputs = node.backward(g);
    for (std::size_t i = 0; i < inputs.size() && i < node.inputs.size(); ++i)
      if (inputs[i].defined()) grads.add(node.inputs[i], inputs[i]);
    return;
  }
  const Tensor& a = node.operands[0];
  // g over an operand of shape `like`: summed when the operand was broadcast.
  const auto fit = [&](const Tensor& t, const Tensor& like) { return like.shape() == t.shape() ? t : sum_of(t); };
  switch (node.op) {
    case Op::add:
    case Op::subtract: {
      const Tensor& b = node.operands[1];
      grads.add(node.inputs[0], fit(g, a), one && a.shape() == g.shape());
      if (node.inputs[1] >= 0) grads.add(node.inputs[1], node.op == Op::add ? fit(g, b) : scaled(fit(g, b), -1.0),
                                         node.op == Op::add && one && b.shape() == g.shape());
      break;
    }
    case Op::multiply: {
      const Tensor& b = node.operands[1];
      const Shape& shape = g.shape();
      if (node.inputs[0] >= 0) grads.add(node.inputs[0], fit(product(g, full_shape(b, shape)), a));
      if (node.inputs[1] >= 0) grads.add(node.inputs[1], fit(product(g, full_shape(a, shape)), b));
      break;
    }
    case Op::scale: grads.add(node.inputs[0], scaled(g, node.factor)); break;
    case Op::square: grads.add(node.inputs[0], product(scaled(a, 2.0), g)); break;
    case Op::sum: grads.add(node.inputs[0], scaled(broadcast(g, a.shape()), node.factor)); break;
    case Op::l2_loss: grads.add(node.inputs[0], one ? a.clone() : product(a, broadcast(g, a.shape()))); break;
    case Op::model:
    case Op::loss:
    case Op::recorded: break;  // handled above
  }
}

std::vector<const GradientTape::ModelCall*> GradientTape::backward_from(const Tensor& target, Grads& grads) {
  if (gradient_done_ && !persistent_)
    throw std::logic_error(
        "GradientTape.gradient(): called a second time on a non-persistent tape; make it with "
        "GradientTape(/*persistent=*/true) to take several gradients of one recording");
  const int t = value_of(target);
  if (t < 0)
    throw std::invalid_argument("GradientTape.gradient(): the target (shape " +
                                (target.defined() ? target.shape().to_string() : std::string("undefined")) +
                                ") was not computed on this tape: record the ops that compute it on the tape");
  if (target.numel() != 1)
    throw std::invalid_argument("GradientTape.gradient(): the target has shape " + target.shape().to_string() +
                                "; it must be a scalar (one element), e.g. a loss reduced with sum or mean");
  gradient_done_ = true;
  const ops::PauseRecording pause;  // the backward functions run ops; they are not part of the recording

  grads.g.resize(values_.size());
  grads.one.assign(values_.size(), false);
  grads.add(t, Tensor::full(Shape{1}, 1.f, target.device()).reshape(target.shape()), true);
  for (auto& n : nodes_)
    if (n->op == Op::model) {
      auto& call = static_cast<ModelCall&>(*n);
      std::fill(call.written.begin(), call.written.end(), false);
      std::fill(call.logits_written.begin(), call.logits_written.end(), false);
    }
  // Nodes after the target's producer cannot reach it; a watched variable as the target has none.
  const int producer = values_[static_cast<std::size_t>(t)].producer;
  std::vector<const ModelCall*> ran;
  for (auto n = static_cast<std::size_t>(producer + 1); n-- > 0;) {
    const Node& node = *nodes_[n];
    if (node.op == Op::model) {
      const auto& call = static_cast<const ModelCall&>(node);
      const bool reached = std::any_of(call.outputs.begin(), call.outputs.end(), [&](int o) {
        return grads.g[static_cast<std::size_t>(o)].defined();
      }) || std::find(call.written.begin(), call.written.end(), true) != call.written.end();
      if (!reached) continue;
      backward_model(call, grads);
      ran.push_back(&call);
    } else {
      backward_node(node, grads);
    }
  }
  return ran;
}

void GradientTape::release() {
  if (persistent_) return;
  values_.clear();
  nodes_.clear();
  by_address_.clear();
  variable_values_.clear();
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           UnconnectedGradients unconnected) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const int v = value_of(sources[i]);
    if (v < 0 || values_[static_cast<std::size_t>(v)].producer >= 0 || values_[static_cast<std::size_t>(v)].variable)
      throw std::invalid_argument("GradientTape.gradient(): source " + std::to_string(i) + " (shape " +
                                  (sources[i].defined() ? sources[i].shape().to_string() : std::string("undefined")) +
                                  ") is not a tensor this tape watches: watch() it before computing with it (for "
                                  "a variable or a model's weights, pass the variables)");
    ids.push_back(v);
  }
  Grads grads;
  backward_from(target, grads);
  std::vector<Tensor> result;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    Tensor g = grads.g[static_cast<std::size_t>(ids[i])];
    if (g.defined() && !persistent_ && grads.one[static_cast<std::size_t>(ids[i])]) g = g.clone();
    if (!g.defined() && unconnected == UnconnectedGradients::zero)
      g = Tensor::zeros(sources[i].shape(), DType::float32, sources[i].device());
    result.push_back(g);
  }
  release();
  return result;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<VariablePtr>& variables,
                                           UnconnectedGradients unconnected) {
  for (const VariablePtr& v : variables)
    if (!v) throw std::invalid_argument("GradientTape.gradient(): a null variable");
  Grads grads;
  const std::vector<const ModelCall*> ran = backward_from(target, grads);

  std::vector<Tensor> result;
  result.reserve(variables.size());
  for (const VariablePtr& v : variables) {
    Tensor g;
    const auto leaf = variable_values_.find(v.get());
    if (leaf != variable_values_.end()) g = grads.g[static_cast<std::size_t>(leaf->second)];
    for (const ModelCall* call : ran) {
      const std::vector<VariablePtr>& weights = call->plan->trainable_weights();
      const auto k = std::find(weights.begin(), weights.end(), v);
      if (k == weights.end()) continue;
      const Tensor& wg = call->plan->weight_grads()[static_cast<std::size_t>(k - weights.begin())];
      if (!g.defined()) {
        g = persistent_ ? wg.clone() : wg;
      } else {
        Tensor sum(wg.shape(), DType::float32, wg.device());
        be(sum).add(g.data<float>(), wg.data<float>(), sum.data<float>(), sum.numel());
        g = sum;
      }
    }
    if (g.defined() && g.shape() != v->value.shape()) g = g.reshape(v->value.shape());
    if (!g.defined() && unconnected == UnconnectedGradients::zero)
      g = Tensor::zeros(v->value.shape(), DType::float32, v->value.device());
    result.push_back(g);
  }
  release();
  return result;
}

}  // namespace tower
