#include "layers/recurrent.h"

#include <stdexcept>
#include <string>

#include "api/ops/ops.h"

namespace tower::layers {

RecurrentLayer::RecurrentLayer(std::string type, std::string name, int states, int gates, RecurrentSettings settings)
    : CustomLayer(std::move(type), std::move(name)), states_(states), gates_(gates), settings_(settings) {
  if (settings_.units <= 0)
    throw std::invalid_argument(where() + "units must be positive, got " + std::to_string(settings_.units));
  const auto check_rate = [&](const char* key, double rate) {
    if (!(rate >= 0.0 && rate < 1.0))
      throw std::invalid_argument(where() + key + " must be in [0, 1), got " + std::to_string(rate));
  };
  check_rate("dropout", settings_.dropout);
  check_rate("recurrent_dropout", settings_.recurrent_dropout);
}

std::vector<Shape> RecurrentLayer::compute_output_shape(const std::vector<Shape>& in) const {
  if (in.size() != 1 && in.size() != static_cast<std::size_t>(1 + states_))
    shape_error("takes a sequence and optionally " + std::to_string(states_) + " initial state" +
                (states_ > 1 ? "s" : "") + ", got " + std::to_string(in.size()) + " inputs");
  const Shape& x = in[0];
  if (x.rank() != 3) shape_error("expects a sequence [batch, timesteps, features], got shape " + x.to_string());
  if (x[2] <= 0) shape_error("expects a sequence whose feature size is known, got shape " + x.to_string());
  if (features_ > 0 && x[2] != features_)
    shape_error("was built for " + std::to_string(features_) + " features, got input shape " + x.to_string());
  const Index units = settings_.units;
  for (std::size_t k = 1; k < in.size(); ++k)
    if (in[k].rank() != 2 || in[k][1] != units || (in[k][0] >= 0 && x[0] >= 0 && in[k][0] != x[0]))
      shape_error("expects initial states [batch, " + std::to_string(units) + "], got shape " + in[k].to_string() +
                  " for input shape " + x.to_string());
  std::vector<Shape> out;
  out.push_back(settings_.return_sequences ? Shape{x[0], x[1], units} : Shape{x[0], units});
  if (settings_.return_state)
    for (int k = 0; k < states_; ++k) out.push_back(Shape{x[0], units});
  return out;
}

std::vector<Tensor> RecurrentLayer::call(const std::vector<Tensor>& inputs, bool training) {
  return call_with_masks(inputs, {}, training);
}

std::vector<SymbolicTensor> RecurrentLayer::compute_mask(const std::vector<SymbolicTensor>&,
                                                         const std::vector<SymbolicTensor>& masks) const {
  std::vector<SymbolicTensor> out(settings_.return_state ? static_cast<std::size_t>(1 + states_) : 1);
  if (settings_.return_sequences && !masks.empty()) out[0] = masks[0];
  return out;
}

std::vector<Tensor> RecurrentLayer::call_with_masks(const std::vector<Tensor>& inputs,
                                                    const std::vector<Tensor>& masks, bool training) {
  Tensor x = inputs[0];
  const Index n = x.dim(0), t = x.dim(1), units = settings_.units;
  if (t < 1) throw std::invalid_argument(where() + "the input sequence " + x.shape().to_string() + " has no step");
  Tensor mask = masks.empty() ? Tensor() : masks[0];
  if (mask.defined() && mask.shape() != Shape{n, t})
    throw std::invalid_argument(where() + "the mask of shape " + mask.shape().to_string() +
                                " does not fit the input sequence " + x.shape().to_string() +
                                " (expected [batch, timesteps])");
  if (settings_.go_backwards) {
    x = reverse_steps(x);
    if (mask.defined()) mask = ops::reshape(reverse_steps(ops::reshape(mask, Shape{n, t, 1})), Shape{n, t});
  }
  StepMasking masking(mask, settings_.zero_output_for_mask);
  const StepDropout dropout = training ? draw_dropout(x, units) : StepDropout{};
  std::vector<Tensor> states;
  if (inputs.size() > 1)
    states.assign(inputs.begin() + 1, inputs.end());
  else if (settings_.stateful)
    states = carried_states(n);
  for (int k = static_cast<int>(states.size()); k < states_; ++k)
    states.push_back(Tensor::zeros(Shape{n, units}, DType::float32, x.device()));
  Result r = run(x, states, settings_.return_sequences, dropout, masking);
  if (settings_.stateful) carry(r.states);
  std::vector<Tensor> out;
  // Keras' last output under a mask is the last step's masked output, not the carried state.
  out.push_back(settings_.return_sequences ? r.sequence : masking.active() ? masking.last_output() : r.states[0]);
  if (settings_.return_state)
    for (const Tensor& s : r.states) out.push_back(s);
  return out;
}

RecurrentLayer::StepDropout RecurrentLayer::draw_dropout(Tensor& x, Index units) {
  StepDropout d;
  if (!in_plan_forward()) return d;  // compute_output_shape's calls
  const Index n = x.dim(0), f = x.dim(2);
  // Keras' implementation 1 (one mask per gate) where recurrent dropout applies; else one mask for the sequence.
  const int masks = settings_.recurrent_dropout > 0.0 ? gates_ : 1;
  if (settings_.dropout > 0.0) {
    for (int g = 0; g < masks; ++g)
      d.input.push_back(dropout_mask(Shape{n, f}, x.device(), settings_.dropout, settings_.seed, g));
    if (masks == 1) {
      x = x * ops::reshape(d.input[0], Shape{n, 1, f});
      d.input.clear();
    }
  }
  if (settings_.recurrent_dropout > 0.0)
    for (int g = 0; g < masks; ++g)
      d.recurrent.push_back(
          dropout_mask(Shape{n, units}, x.device(), settings_.recurrent_dropout, settings_.seed, gates_ + g));
  return d;
}

std::vector<Tensor> RecurrentLayer::carried_states(Index batch) {
  if (!in_plan_forward()) return {};  // compute_output_shape's calls neither read nor change the states
  const std::lock_guard lock(carried_mutex_);
  const auto it = carried_.find(replica_id());
  if (it == carried_.end()) return {};
  const Index expected = it->second.front().dim(0);
  if (expected != batch)
    throw std::invalid_argument(where() + "is stateful: every batch must have the batch size of its states (" +
                                std::to_string(expected) + "), got a batch of " + std::to_string(batch) +
                                " (drop the last partial batch, or reset_state() first)");
  return it->second;
}

void RecurrentLayer::carry(const std::vector<Tensor>& states) {
  if (!in_plan_forward()) return;
  std::vector<Tensor> values;
  for (const Tensor& s : states) values.push_back(s.clone());
  const std::lock_guard lock(carried_mutex_);
  carried_[replica_id()] = std::move(values);
}

void RecurrentLayer::reset_state() {
  const std::lock_guard lock(carried_mutex_);
  carried_.clear();
}

Tensor gate_matmul(const Tensor& x, const Tensor& kernel, const std::vector<Tensor>& masks) {
  if (masks.empty()) return ops::matmul(x, kernel);
  const Index f = kernel.dim(0), cols = kernel.dim(1) / static_cast<Index>(masks.size());
  std::vector<Tensor> parts;
  for (std::size_t g = 0; g < masks.size(); ++g) {
    const Tensor& m = masks[g];
    const Tensor masked = x.shape().rank() == 3 ? x * ops::reshape(m, Shape{m.dim(0), 1, m.dim(1)}) : x * m;
    parts.push_back(ops::matmul(masked, ops::slice(kernel, {0, static_cast<Index>(g) * cols}, {f, cols})));
  }
  return ops::concatenate(parts, -1);
}

RecurrentLayer::StepMasking::StepMasking(const Tensor& mask, bool zero_output) : zero_output_(zero_output) {
  if (!mask.defined()) return;
  steps_ = ops::split(mask, static_cast<int>(mask.dim(1)), 1);  // [N, 1] each
}

Tensor RecurrentLayer::StepMasking::apply(std::size_t t, std::vector<Tensor>& next, const std::vector<Tensor>& previous) {
  if (!active()) return next[0];
  const Tensor& m = steps_.at(t);
  const Tensor masked = 1.f - m;
  const Tensor output = next[0];
  for (std::size_t k = 0; k < next.size(); ++k) next[k] = m * next[k] + masked * previous[k];
  if (zero_output_ || !previous_output_.defined())
    previous_output_ = m * output;
  else
    previous_output_ = m * output + masked * previous_output_;
  return previous_output_;
}

std::vector<Tensor> unstack_steps(const Tensor& x) {
  std::vector<Tensor> steps = ops::split(x, static_cast<int>(x.dim(1)), 1);
  for (Tensor& s : steps) s = ops::squeeze(s, {1});
  return steps;
}

Tensor stack_steps(const std::vector<Tensor>& steps) { return ops::stack(steps, 1); }

Tensor reverse_steps(const Tensor& x) {
  return ops::strided_slice(x, {0, x.dim(1) - 1}, {x.dim(0), -x.dim(1) - 1}, {1, -1});
}

}  // namespace tower::layers
