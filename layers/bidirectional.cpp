#include "layers/bidirectional.h"

#include <stdexcept>
#include <string>

#include "api/ops/ops.h"

namespace tower::layers {

namespace {

// `layer` rebuilt from its config as `name`, with go_backwards flipped when `flip`.
std::shared_ptr<RecurrentLayer> recreate(const Layer& layer, const std::string& name, bool flip,
                                         const std::string& where) {
  const Config serialized = layer.serialize();
  Config config = serialized.at("config");
  config.set("name", name);
  if (flip) config.set("go_backwards", !config.at("go_backwards").as_bool());
  Config again = Config::map();
  again.set("class_name", serialized.at("class_name"));
  again.set("config", config);
  auto recurrent = std::dynamic_pointer_cast<RecurrentLayer>(layer_from_config(again));
  if (!recurrent)
    throw std::invalid_argument(where + "wraps a recurrent layer (SimpleRNN, LSTM or GRU), got '" + layer.name() +
                                "' (" + layer.type() + ")");
  return recurrent;
}


}  // namespace

BidirectionalImpl::BidirectionalImpl(Options options)
    : CustomLayer("Bidirectional", options.name), options_(std::move(options)) {
  options_.name = name();
  if (!options_.layer) throw std::invalid_argument(where() + "layer is required");
  if (!std::dynamic_pointer_cast<RecurrentLayer>(options_.layer))
    throw std::invalid_argument(where() + "wraps a recurrent layer (SimpleRNN, LSTM or GRU), got '" +
                                options_.layer->name() + "' (" + options_.layer->type() + ")");
  const std::string& m = options_.merge_mode ? *options_.merge_mode : std::string();
  if (options_.merge_mode && m != "concat" && m != "sum" && m != "ave" && m != "mul")
    throw std::invalid_argument(where() + "merge_mode must be concat, sum, ave, mul or none, got '" + m + "'");
  forward_ = recreate(*options_.layer, "forward_" + options_.layer->name(), false, where());
  const Layer& back = options_.backward_layer ? *options_.backward_layer : *options_.layer;
  backward_ = recreate(back, "backward_" + back.name(), !options_.backward_layer, where());
  forward_->set_zero_output_for_mask(forward_->settings().return_sequences);
  backward_->set_zero_output_for_mask(backward_->settings().return_sequences);
  const RecurrentSettings &f = forward_->settings(), &b = backward_->settings();
  if (f.return_sequences != b.return_sequences)
    throw std::invalid_argument(where() + "the forward and backward layers differ in return_sequences");
  if (f.return_state != b.return_state)
    throw std::invalid_argument(where() + "the forward and backward layers differ in return_state");
  if (forward_->num_states() != backward_->num_states())
    throw std::invalid_argument(where() + "the forward and backward layers have different states (" +
                                forward_->type() + ", " + backward_->type() + ")");
}

std::vector<Shape> BidirectionalImpl::merge_shapes(const Shape& forward) const {
  if (!options_.merge_mode) return {forward, forward};
  if (*options_.merge_mode != "concat") return {forward};
  std::vector<Index> dims = forward.dims();
  dims.back() *= 2;
  return {Shape(dims)};
}

std::vector<Shape> BidirectionalImpl::compute_output_shape(const std::vector<Shape>& in) const {
  const int states = forward_->num_states();
  if (in.size() != 1 && in.size() != static_cast<std::size_t>(1 + 2 * states))
    shape_error("takes a sequence and optionally " + std::to_string(2 * states) +
                " initial states (the forward layer's, then the backward layer's), got " + std::to_string(in.size()) +
                " inputs");
  std::vector<Shape> first{in[0]}, second{in[0]};
  for (int k = 0; k < states && in.size() > 1; ++k) {
    first.push_back(in[static_cast<std::size_t>(1 + k)]);
    second.push_back(in[static_cast<std::size_t>(1 + states + k)]);
  }
  const std::vector<Shape> f = forward_->compute_output_shape(first);
  const std::vector<Shape> b = backward_->compute_output_shape(second);
  std::vector<Shape> out = merge_shapes(f[0]);
  if (b[0] != f[0])
    shape_error("the forward and backward layers' outputs differ: " + f[0].to_string() + " and " + b[0].to_string());
  for (std::size_t k = 1; k < f.size(); ++k) out.push_back(f[k]);
  for (std::size_t k = 1; k < b.size(); ++k) out.push_back(b[k]);
  return out;
}

void BidirectionalImpl::build(const std::vector<Shape>& in) {
  forward_->ensure_built({in[0]});
  backward_->ensure_built({in[0]});
}

std::vector<Tensor> BidirectionalImpl::merge(const Tensor& f, const Tensor& b) const {
  if (!options_.merge_mode) return {f, b};
  const std::string& m = *options_.merge_mode;
  if (m == "concat") return {ops::concatenate({f, b}, -1)};
  if (m == "sum") return {f + b};
  if (m == "mul") return {f * b};
  return {(f + b) * 0.5f};
}

std::vector<Tensor> BidirectionalImpl::call(const std::vector<Tensor>& inputs, bool training) {
  return call_with_masks(inputs, {}, training);
}

std::vector<SymbolicTensor> BidirectionalImpl::compute_mask(const std::vector<SymbolicTensor>&,
                                                            const std::vector<SymbolicTensor>& masks) const {
  const RecurrentSettings& s = forward_->settings();
  const std::size_t outputs = (options_.merge_mode ? 1 : 2) + (s.return_state ? 2 * forward_->num_states() : 0);
  std::vector<SymbolicTensor> out(outputs);
  if (s.return_sequences && !masks.empty()) {
    out[0] = masks[0];
    if (!options_.merge_mode) out[1] = masks[0];
  }
  return out;
}

std::vector<Tensor> BidirectionalImpl::call_with_masks(const std::vector<Tensor>& inputs,
                                                       const std::vector<Tensor>& masks, bool training) {
  const std::size_t states = static_cast<std::size_t>(forward_->num_states());
  std::vector<Tensor> first{inputs[0]}, second{inputs[0]};
  for (std::size_t k = 0; k < states && inputs.size() > 1; ++k) {
    first.push_back(inputs[1 + k]);
    second.push_back(inputs[1 + states + k]);
  }
  std::vector<Tensor> first_masks, second_masks;
  if (!masks.empty() && masks[0].defined()) {
    first_masks.assign(first.size(), Tensor());
    second_masks.assign(second.size(), Tensor());
    first_masks[0] = second_masks[0] = masks[0];
  }
  const std::vector<Tensor> f = forward_->call_with_masks(first, first_masks, training);
  std::vector<Tensor> b = backward_->call_with_masks(second, second_masks, training);
  if (backward_->settings().return_sequences) b[0] = reverse_steps(b[0]);
  std::vector<Tensor> out = merge(f[0], b[0]);
  out.insert(out.end(), f.begin() + 1, f.end());
  out.insert(out.end(), b.begin() + 1, b.end());
  return out;
}

std::vector<VariablePtr> BidirectionalImpl::weights() const {
  std::vector<VariablePtr> w = forward_->weights();
  for (const VariablePtr& v : backward_->weights()) w.push_back(v);
  return w;
}

std::vector<VariablePtr> BidirectionalImpl::trainable_weights() const {
  if (!trainable()) return {};
  std::vector<VariablePtr> w = forward_->trainable_weights();
  for (const VariablePtr& v : backward_->trainable_weights()) w.push_back(v);
  return w;
}

std::vector<VariablePtr> BidirectionalImpl::non_trainable_weights() const {
  if (!trainable()) return weights();
  std::vector<VariablePtr> w = forward_->non_trainable_weights();
  for (const VariablePtr& v : backward_->non_trainable_weights()) w.push_back(v);
  return w;
}

void BidirectionalImpl::set_trainable(bool trainable) {
  CustomLayer::set_trainable(trainable);
  forward_->set_trainable(trainable);
  backward_->set_trainable(trainable);
}

std::vector<KerasWeightGroup> BidirectionalImpl::keras_weight_groups() const {
  std::vector<KerasWeightGroup> groups{{"", name(), {}}};
  for (auto& g : keras_weight_groups_below("forward_layer", *forward_)) groups.push_back(std::move(g));
  for (auto& g : keras_weight_groups_below("backward_layer", *backward_)) groups.push_back(std::move(g));
  return groups;
}

TOWER_REGISTER_LAYER(BidirectionalImpl, "Bidirectional");

}  // namespace tower::layers
