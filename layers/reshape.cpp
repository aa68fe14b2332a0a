#include "layers/reshape.h"

#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {
std::string target_to_string(const std::vector<int>& target) {
  std::string s = "(";
  for (std::size_t i = 0; i < target.size(); ++i) s += (i ? ", " : "") + std::to_string(target[i]);
  return s + (target.size() == 1 ? ",)" : ")");
}
}  // namespace

ReshapeImpl::ReshapeImpl(Options options) : Layer("Reshape", options.name), options_(std::move(options)) {
  options_.name = name();
  int unknown = 0;
  for (int d : options_.target_shape) {
    if (d == -1) ++unknown;
    if (d == 0 || d < -1 || unknown > 1)
      throw std::invalid_argument(where() + "target_shape must have positive entries and at most one -1, got " +
                                  target_to_string(options_.target_shape));
  }
}

std::vector<Shape> ReshapeImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() < 1) shape_error("expects an input with a batch axis, got shape " + s.to_string());
  Index size = 1;
  bool size_known = true;
  for (int i = 1; i < s.rank(); ++i) {
    if (s[i] < 0) size_known = false;
    else size *= s[i];
  }
  std::vector<Index> dims{s[0]};
  Index known = 1;
  int unknown_at = -1;
  for (int d : options_.target_shape) {
    if (d == -1) unknown_at = static_cast<int>(dims.size());
    else known *= d;
    dims.push_back(d);
  }
  if (!size_known) return {Shape(dims)};
  const bool fits = unknown_at >= 0 ? size % known == 0 : size == known;
  if (!fits)
    shape_error("the total size of the new array must be unchanged: input shape " + s.to_string() + " has " +
                std::to_string(size) + " elements per example, target_shape " +
                target_to_string(options_.target_shape) + " has " +
                (unknown_at >= 0 ? "a multiple of " : "") + std::to_string(known));
  if (unknown_at >= 0) dims[static_cast<std::size_t>(unknown_at)] = size / known;
  return {Shape(dims)};
}

void ReshapeImpl::forward(const ForwardContext& ctx) { ctx.outputs[0].copy_from(ctx.inputs[0]); }

void ReshapeImpl::backward(const BackwardContext& ctx) {
  if (ctx.grad_inputs[0].defined()) ctx.grad_inputs[0].copy_from(ctx.grad_outputs[0]);
}

TOWER_REGISTER_LAYER(ReshapeImpl, "Reshape");

}  // namespace tower::layers
