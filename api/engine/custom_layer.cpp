#include "api/engine/custom_layer.h"

#include <map>
#include <memory>
#include <utility>
#include <stdexcept>
#include <string>

#include "api/backend/backend.h"
#include "api/engine/replica_context.h"
#include "api/engine/step_values.h"
#include "api/ops/recorder.h"

namespace tower {

namespace {

// The recording of the last forward, which backward differentiates.
struct CallState : LayerState {
  ops::Recording recording;
  std::vector<Tensor> inputs, outputs;
  // Per layer (a wrapper's call() runs its layers' calls) and dropout_mask stream: its slot among the step values.
  std::map<std::pair<const CustomLayer*, int>, int> seed_slots;
};

// The forward running call() on this thread, for what call() asks of its plan (dropout masks, the replica).
thread_local const ForwardContext* current_forward = nullptr;

class ForwardScope {
 public:
  explicit ForwardScope(const ForwardContext& ctx) : previous_(current_forward) { current_forward = &ctx; }
  ~ForwardScope() { current_forward = previous_; }
  ForwardScope(const ForwardScope&) = delete;
  ForwardScope& operator=(const ForwardScope&) = delete;

 private:
  const ForwardContext* previous_;
};

}  // namespace

std::vector<Shape> CustomLayer::compute_output_shape(const std::vector<Shape>& input_shapes) const {
  auto& self = const_cast<CustomLayer&>(*this);  // call() and build() are the user's, and not const
  const bool was_built = built();
  self.ensure_built(input_shapes);
  try {
    return shapes_from_call(input_shapes);
  } catch (...) {
    if (!was_built) self.unbuild();  // built for shapes its call() does not take: nothing half-built is left
    throw;
  }
}

std::vector<Shape> CustomLayer::shapes_from_call(const std::vector<Shape>& input_shapes) const {
  // Unknown sizes besides the batch (a sequence of any length) are taken as 1 and then as 2: an output size that
  // follows them is unknown too.
  bool unknown = false;
  for (const Shape& s : input_shapes)
    for (int d = 1; d < s.rank(); ++d) unknown = unknown || s[d] < 0;
  std::vector<Shape> shapes = shapes_from_call(input_shapes, 1);
  if (!unknown) return shapes;
  const std::vector<Shape> other = shapes_from_call(input_shapes, 2);
  for (std::size_t k = 0; k < shapes.size() && k < other.size(); ++k) {
    std::vector<Index> dims = shapes[k].dims();
    for (int d = 1; d < shapes[k].rank() && d < other[k].rank(); ++d)
      if (dims[static_cast<std::size_t>(d)] != other[k][d]) dims[static_cast<std::size_t>(d)] = -1;
    shapes[k] = Shape(dims);
  }
  return shapes;
}

std::vector<Shape> CustomLayer::shapes_from_call(const std::vector<Shape>& input_shapes, Index unknown_size) const {
  auto& self = const_cast<CustomLayer&>(*this);
  const std::vector<VariablePtr> w = weights();
  const Device device = w.empty() ? Device::cpu() : w.front()->value.device();
  std::vector<Tensor> zeros;
  for (const Shape& s : input_shapes) {
    std::vector<Index> dims = s.dims();
    for (Index& d : dims)
      if (d < 0) d = unknown_size;
    if (!dims.empty()) dims[0] = 1;
    zeros.push_back(Tensor::zeros(Shape(dims), DType::float32, device));
  }
  std::vector<Tensor> out;
  {
    const ops::PauseRecording pause;
    try {
      out = self.call(zeros, false);
    } catch (const std::invalid_argument& e) {
      shape_error(std::string("call() failed on inputs of shapes ") + [&] {
        std::string s;
        for (const Shape& x : input_shapes) s += (s.empty() ? "" : ", ") + x.to_string();
        return s;
      }() + ": " + e.what());
    }
  }
  std::vector<Shape> shapes;
  for (const Tensor& t : out) {
    if (!t.defined() || t.shape().rank() == 0) shape_error("call() must return tensors with a batch axis");
    std::vector<Index> dims = t.shape().dims();
    dims[0] = input_shapes.empty() || input_shapes[0].rank() == 0 ? dims[0] : input_shapes[0][0];
    shapes.emplace_back(dims);
  }
  if (shapes.empty()) shape_error("call() returned no tensor");
  return shapes;
}

void CustomLayer::forward(const ForwardContext& ctx) {
  auto& st = ctx.get_state<CallState>();
  st.recording.clear();
  st.inputs.assign(ctx.inputs.begin(), ctx.inputs.end());
  for (const Tensor& x : st.inputs) st.recording.watch(x);
  for (const VariablePtr& v : trainable_weights()) st.recording.watch(v->value);
  {
    const ForwardScope forward_scope(ctx);
    const ops::RecordingScope scope(st.recording, /*exclusive=*/true);
    if (ctx.masks.empty()) {
      st.outputs = call(st.inputs, ctx.training);
    } else {
      const std::vector<Tensor> masks(ctx.masks.begin(), ctx.masks.end());
      st.outputs = call_with_masks(st.inputs, masks, ctx.training);
    }
  }
  if (st.outputs.size() != ctx.outputs.size())
    throw std::logic_error(where() + "call() returned " + std::to_string(st.outputs.size()) + " tensors, " +
                           std::to_string(ctx.outputs.size()) + " expected");
  for (std::size_t i = 0; i < st.outputs.size(); ++i) {
    if (st.outputs[i].shape() != ctx.outputs[i].shape() || st.outputs[i].dtype() != DType::float32)
      throw std::logic_error(where() + "call() returned output " + std::to_string(i) + " of shape " +
                             st.outputs[i].shape().to_string() + " where its output shape is " +
                             ctx.outputs[i].shape().to_string());
    const Tensor& y = st.outputs[i];
    Tensor out = ctx.outputs[i];
    out.copy_from(y.device() == out.device() ? y : y.to(out.device()));
  }
}

void CustomLayer::backward(const BackwardContext& ctx) {
  auto& st = ctx.get_state<CallState>();
  std::vector<Tensor> seeds(ctx.grad_outputs.begin(), ctx.grad_outputs.end());
  // Inputs whose gradient the plan does not ask for (a model's input) are no sources: nothing is computed for them.
  std::vector<Tensor> sources;
  // A tensor given as several inputs (self-attention's query and value) is one value of the recording, whose gradient
  // is the total over all its uses: the first of those inputs gets it and the others zero, as the plan adds them up.
  const auto repeats_a_source = [&](std::size_t i) {
    for (std::size_t j = 0; j < i; ++j)
      if (sources[j].defined() && sources[j].raw_data() == st.inputs[i].raw_data() &&
          sources[j].shape() == st.inputs[i].shape())
        return true;
    return false;
  };
  for (std::size_t i = 0; i < st.inputs.size(); ++i) {
    const bool wanted = i < ctx.grad_inputs.size() && ctx.grad_inputs[i].defined();
    sources.push_back(wanted && !repeats_a_source(i) ? st.inputs[i] : Tensor());
  }
  const std::vector<VariablePtr> trainable = trainable_weights();
  if (!ctx.weight_grads.empty())
    for (const VariablePtr& v : trainable) sources.push_back(v->value);
  const std::vector<Tensor> g = st.recording.gradients(st.outputs, seeds, sources);
  const auto write = [](Tensor dst, const Tensor& grad) {
    if (!dst.defined()) return;
    if (grad.defined())
      dst.copy_from(grad);
    else
      dst.zero();
  };
  for (std::size_t i = 0; i < ctx.grad_inputs.size() && i < st.inputs.size(); ++i) write(ctx.grad_inputs[i], g[i]);
  for (std::size_t k = 0; k < ctx.weight_grads.size(); ++k) write(ctx.weight_grads[k], g[st.inputs.size() + k]);
}

Tensor CustomLayer::dropout_mask(const Shape& shape, Device device, double rate, std::optional<std::int64_t> seed,
                                 int stream) const {
  if (!current_forward || !current_forward->step_values)
    throw std::logic_error(where() + "a dropout mask is drawn only in a plan's training forward");
  if (stream < 0) throw std::invalid_argument(where() + "dropout mask stream " + std::to_string(stream) + " < 0");
  auto& st = current_forward->get_state<CallState>();
  const auto [slot, added] = st.seed_slots.try_emplace({this, stream}, -1);
  if (added)
    slot->second = current_forward->step_values->add_seed(
        seed, current_forward->replica,
        {static_cast<std::uint64_t>(shape.numel()), static_cast<std::uint64_t>(stream)});
  Tensor mask(shape, DType::float32, device);
  backend::get(device).dropout_mask(mask.data<float>(), mask.numel(), static_cast<float>(rate),
                                    current_forward->step_values->device_value(slot->second));
  return mask;
}

bool CustomLayer::in_plan_forward() const { return current_forward != nullptr; }

int CustomLayer::replica_id() const {
  return current_forward && current_forward->replica ? current_forward->replica->replica_id_in_sync_group() : 0;
}

FunctionLayer::FunctionLayer(std::string type, std::string name, int inputs, Function function)
    : CustomLayer(std::move(type), std::move(name)), inputs_(inputs), function_(std::move(function)) {
  if (!function_) throw std::invalid_argument(where() + "no function given");
}

std::vector<Tensor> FunctionLayer::call(const std::vector<Tensor>& inputs, bool) { return {function_(inputs)}; }

Config FunctionLayer::get_config() const {
  throw std::logic_error(where() + "a C++ function cannot be written into a config (saving the model, rebuilding "
                                   "it for a strategy's replicas); write a CustomLayer with get_config and "
                                   "TOWER_REGISTER_LAYER for a layer that must be saved");
}

SymbolicTensor mask_op(const std::string& type, const std::vector<SymbolicTensor>& inputs,
                       FunctionLayer::Function function) {
  auto layer = std::make_shared<FunctionLayer>(type, "", static_cast<int>(inputs.size()), std::move(function));
  return (*layer)(inputs)[0];
}

}  // namespace tower
