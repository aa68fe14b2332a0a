#include "layers/permute.h"

#include <algorithm>
#include <numeric>

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

PermuteImpl::PermuteImpl(Options options) : Layer("Permute", options.name), options_(std::move(options)) {
  options_.name = name();
  std::vector<int> sorted = options_.dims, expected(options_.dims.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(expected.begin(), expected.end(), 1);
  if (sorted != expected || options_.dims.empty() || options_.dims.size() > 7) {
    std::string got;
    for (int d : options_.dims) got += (got.empty() ? "" : ", ") + std::to_string(d);
    throw std::invalid_argument(where() + "dims must be a permutation of 1..n (at most 7 axes), got [" + got + "]");
  }
  perm_.push_back(0);
  perm_.insert(perm_.end(), options_.dims.begin(), options_.dims.end());
  inverse_.resize(perm_.size());
  for (std::size_t i = 0; i < perm_.size(); ++i) inverse_[static_cast<std::size_t>(perm_[i])] = static_cast<int>(i);
}

std::vector<Shape> PermuteImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() != static_cast<int>(perm_.size()))
    shape_error("dims has " + std::to_string(options_.dims.size()) + " axes, so the input must have rank " +
                std::to_string(perm_.size()) + ", got shape " + s.to_string());
  std::vector<Index> dims;
  for (int p : perm_) dims.push_back(s[p]);
  return {Shape(dims)};
}

void PermuteImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  backend::get(x.device()).transpose(x.data<float>(), ctx.outputs[0].data<float>(), x.shape(), perm_);
}

void PermuteImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  backend::get(dy.device()).transpose(dy.data<float>(), dx.data<float>(), dy.shape(), inverse_);
}

TOWER_REGISTER_LAYER(PermuteImpl, "Permute");

}  // namespace tower::layers
