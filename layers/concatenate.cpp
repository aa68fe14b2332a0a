#include "layers/concatenate.h"

#include "api/backend/backend.h"
#include "api/engine/custom_layer.h"
#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

namespace {
// Each input as [outer, inner_i] with inner_i = its dims from the axis on; the output is [outer, sum inner_i].
// Filled in forward, when the input shapes are known, and read by backward (which gets no inputs).
struct ConcatenateState : LayerState {
  Index outer = 0, out_inner = 0;
  std::vector<Index> inner;
};
}  // namespace

ConcatenateImpl::ConcatenateImpl(Options options)
    : Merge("Concatenate", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> ConcatenateImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_input_count(in, 2);
  const int rank = in[0].rank();
  const std::string seen = "axis " + std::to_string(options_.axis) + ", input shapes " + shapes_to_string(in);
  if (options_.axis < -rank || options_.axis >= rank) shape_error("axis out of range: " + seen);
  const int axis = in[0].normalize_axis(options_.axis);
  if (axis == 0) shape_error("cannot concatenate along the batch axis: " + seen);
  Shape out = in[0];
  for (std::size_t k = 1; k < in.size(); ++k) {
    const Shape& s = in[k];
    bool fits = s.rank() == rank;
    for (int i = 0; fits && i < rank; ++i) fits = i == axis || s[i] == out[i];
    if (!fits) shape_error("inputs must match in every dimension except the concatenation axis: " + seen);
    out[axis] = out[axis] < 0 || s[axis] < 0 ? -1 : out[axis] + s[axis];
  }
  return {out};
}

void ConcatenateImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  ConcatenateState& st = ctx.get_state<ConcatenateState>();
  const int axis = y.shape().normalize_axis(options_.axis);
  st.outer = 1;
  for (int i = 0; i < axis; ++i) st.outer *= y.dim(i);
  st.out_inner = y.numel() / st.outer;
  st.inner.resize(ctx.inputs.size());
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) st.inner[i] = ctx.inputs[i].numel() / st.outer;

  backend::Backend& be = backend::get(y.device());
  Index offset = 0;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    be.copy_strided(ctx.inputs[i].data<float>(), st.inner[i], y.data<float>(), st.out_inner, offset, st.outer);
    offset += st.inner[i];
  }
}

void ConcatenateImpl::backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  const ConcatenateState& st = ctx.get_state<ConcatenateState>();
  backend::Backend& be = backend::get(dy.device());
  Index offset = 0;
  for (std::size_t i = 0; i < ctx.grad_inputs.size(); ++i) {
    if (ctx.grad_inputs[i].defined())
      be.copy_strided_back(dy.data<float>(), st.out_inner, offset, ctx.grad_inputs[i].data<float>(), st.inner[i],
                           st.outer);
    offset += st.inner[i];
  }
}

std::vector<SymbolicTensor> ConcatenateImpl::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                          const std::vector<SymbolicTensor>& masks) const {
  bool any = false;
  for (const SymbolicTensor& m : masks) any = any || m.defined();
  if (!any) return {SymbolicTensor()};
  std::vector<SymbolicTensor> args = inputs;
  std::vector<int> mask_of;  // per input: its mask's index in args, or -1
  for (const SymbolicTensor& m : masks) {
    mask_of.push_back(m.defined() ? static_cast<int>(args.size()) : -1);
    if (m.defined()) args.push_back(m);
  }
  const int axis = inputs[0].shape().normalize_axis(options_.axis);
  const std::size_t n = inputs.size();
  return {mask_op("ConcatenateMask", args, [n, mask_of, axis](const std::vector<Tensor>& xs) {
    std::vector<Tensor> spread;
    for (std::size_t i = 0; i < n; ++i) {
      const Tensor& x = xs[i];
      if (mask_of[i] < 0) {
        spread.push_back(Tensor::zeros(x.shape(), DType::float32, x.device()) + 1.f);
        continue;
      }
      Tensor m = xs[static_cast<std::size_t>(mask_of[i])];
      while (m.shape().rank() < x.shape().rank()) m = ops::expand_dims(m, -1);
      spread.push_back(ops::broadcast_to(m, x.shape()));
    }
    return ops::max(ops::concatenate(spread, axis), {-1});
  })};
}

TOWER_REGISTER_LAYER(ConcatenateImpl, "Concatenate");

}  // namespace tower::layers
