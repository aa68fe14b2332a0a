#include "layers/recurrent.h"

#include <stdexcept>
#include <string>

#include "api/ops/ops.h"

namespace tower::layers {

RecurrentLayer::RecurrentLayer(std::string type, std::string name, int states, RecurrentSettings settings)
    : CustomLayer(std::move(type), std::move(name)), states_(states), settings_(settings) {
  if (settings_.units <= 0)
    throw std::invalid_argument(where() + "units must be positive, got " + std::to_string(settings_.units));
  if (settings_.stateful)
    throw std::invalid_argument(where() + "stateful=true is not supported: pass the last states back as initial "
                                          "states (return_state=true, then the layer's extra inputs) instead");
  if (settings_.dropout != 0.0 || settings_.recurrent_dropout != 0.0)
    throw std::invalid_argument(where() + "dropout and recurrent_dropout are not supported (got " +
                                std::to_string(settings_.dropout) + " and " +
                                std::to_string(settings_.recurrent_dropout) +
                                "): put a Dropout layer before the recurrent layer instead");
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
  Tensor x = inputs[0];
  const Index n = x.dim(0), t = x.dim(1), units = settings_.units;
  if (t < 1) throw std::invalid_argument(where() + "the input sequence " + x.shape().to_string() + " has no step");
  if (settings_.go_backwards) x = reverse_steps(x);
  std::vector<Tensor> states;
  for (int k = 0; k < states_; ++k)
    states.push_back(inputs.size() > 1 ? inputs[static_cast<std::size_t>(1 + k)]
                                       : Tensor::zeros(Shape{n, units}, DType::float32, x.device()));
  Result r = run(x, states, settings_.return_sequences, training);
  std::vector<Tensor> out;
  out.push_back(settings_.return_sequences ? r.sequence : r.states[0]);
  if (settings_.return_state)
    for (const Tensor& s : r.states) out.push_back(s);
  return out;
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
