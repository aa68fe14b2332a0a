#include "api/engine/node.h"

#include <atomic>

#include "api/engine/layer.h"

namespace tower {

namespace {
std::atomic<std::uint64_t> next_node_id{1};
thread_local bool making_masks = false;
}

const Shape& SymbolicTensor::shape() const {
  if (!node_) throw std::logic_error("shape() of an undefined symbolic tensor");
  return node_->output_shapes().at(static_cast<std::size_t>(index_));
}

Layer& SymbolicTensor::layer() const { return *node_->layer(); }

std::string SymbolicTensor::name() const {
  if (!node_) return "<undefined>";
  const std::string& n = node_->layer()->name();
  return node_->num_outputs() == 1 ? n : n + "[" + std::to_string(index_) + "]";
}

SymbolicTensor SymbolicTensor::mask() const {
  if (!node_) return {};
  return node_->output_mask(index_);
}

SymbolicTensors::operator SymbolicTensor() const {
  if (size() != 1)
    throw std::logic_error("a layer call with " + std::to_string(size()) + " outputs used as one tensor; index it");
  return front();
}

Node::Node(std::shared_ptr<Layer> layer, std::vector<SymbolicTensor> inputs, std::vector<Shape> output_shapes)
    : layer_(std::move(layer)), inputs_(std::move(inputs)), output_shapes_(std::move(output_shapes)),
      computes_mask_(making_masks), id_(next_node_id++) {}

const SymbolicTensor& Node::output_mask(int i) const {
  static const SymbolicTensor none;
  return static_cast<std::size_t>(i) < output_masks_.size() ? output_masks_[static_cast<std::size_t>(i)] : none;
}

Node::MaskScope::MaskScope() : previous_(making_masks) { making_masks = true; }
Node::MaskScope::~MaskScope() { making_masks = previous_; }

}  // namespace tower
