#include "api/engine/input_layer.h"

#include "api/engine/layer_registry.h"

namespace tower {

InputLayerImpl::InputLayerImpl(Options options) : Layer("InputLayer", options.name), options_(std::move(options)) {
  options_.name = name();
  for (Index d : options_.shape)
    if (d == 0 || d < -1)
      shape_error("input shape " + options_.shape.to_string() +
                  " has a dimension that is neither positive nor -1 (a size known only when the data comes)");
}

Shape InputLayerImpl::batch_shape() const {
  std::vector<Index> dims{options_.batch_size.value_or(-1)};
  for (Index d : options_.shape) dims.push_back(d);
  return Shape(dims);
}

SymbolicTensor InputLayerImpl::output() {
  std::shared_ptr<Node> node = node_.lock();
  if (!node) {
    node = std::make_shared<Node>(shared_from_this(), std::vector<SymbolicTensor>{}, std::vector<Shape>{batch_shape()});
    node_ = node;
  }
  return SymbolicTensor(node, 0);
}

std::vector<Shape> InputLayerImpl::compute_output_shape(const std::vector<Shape>&) const { return {batch_shape()}; }

void InputLayerImpl::forward(const ForwardContext&) {
  throw std::logic_error(where() + "an input layer is bound by the plan, never run");
}

void InputLayerImpl::backward(const BackwardContext&) {
  throw std::logic_error(where() + "an input layer is bound by the plan, never run");
}

Config InputLayerImpl::get_config() const { return options_to_config(options_); }

SymbolicTensor Input(Shape shape, std::string name) {
  auto layer = std::make_shared<InputLayerImpl>(InputLayerOptions{.shape = std::move(shape), .name = std::move(name)});
  return layer->output();
}

TOWER_REGISTER_LAYER(InputLayerImpl, "InputLayer");

}  // namespace tower
