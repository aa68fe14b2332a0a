#include "layers/merge.h"

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/engine/symbolic_ops.h"

namespace tower::layers {

namespace {

// Keras' expansion of an input of lower rank: 1s inserted after the batch axis up to `rank` axes.
Shape expanded(const Shape& shape, int rank) {
  if (shape.rank() >= rank || shape.rank() == 0) return shape;
  std::vector<Index> dims{shape.dims().front()};
  dims.insert(dims.end(), static_cast<std::size_t>(rank - shape.rank()), 1);
  dims.insert(dims.end(), shape.dims().begin() + 1, shape.dims().end());
  return Shape(std::move(dims));
}

}  // namespace

std::vector<SymbolicTensor> Merge::compute_mask(const std::vector<SymbolicTensor>&,
                                                const std::vector<SymbolicTensor>& masks) const {
  SymbolicTensor all;
  for (const SymbolicTensor& m : masks)
    if (m.defined()) all = all.defined() ? ops::minimum(all, m) : m;
  return {all};
}

std::string Merge::shapes_to_string(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (std::size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + "]";
}

void Merge::check_input_count(const std::vector<Shape>& in, int min, bool exact) const {
  const int n = static_cast<int>(in.size());
  if (exact ? n != min : n < min)
    shape_error("must be called on " + std::string(exact ? "exactly " : "at least ") + std::to_string(min) +
                " inputs, got " + std::to_string(n) + ": " + shapes_to_string(in));
}

std::vector<Shape> Merge::compute_output_shape(const std::vector<Shape>& in) const {
  check_input_count(in, 2);
  for (const Shape& s : in)
    if (s.rank() < 1) shape_error("inputs must have a batch axis, got " + shapes_to_string(in));
  // The batch axes: equal where known (Keras: "Cannot merge tensors with different batch sizes").
  Index batch = -1;
  for (const Shape& s : in) {
    if (s[0] < 0) continue;
    if (batch >= 0 && s[0] != batch)
      shape_error("cannot merge tensors with different batch sizes: " + shapes_to_string(in));
    batch = s[0];
  }
  // The other axes, aligned at their ends; an unknown size (-1) stays unknown unless the other is 1.
  std::vector<Index> out(in[0].dims().begin() + 1, in[0].dims().end());
  for (std::size_t i = 1; i < in.size(); ++i) {
    const std::vector<Index> dims(in[i].dims().begin() + 1, in[i].dims().end());
    if (dims.size() > out.size()) out.insert(out.begin(), dims.size() - out.size(), 1);
    for (std::size_t k = 1; k <= dims.size(); ++k) {
      Index& o = out[out.size() - k];
      const Index d = dims[dims.size() - k];
      if (o == 1 || o == d) {
        o = d;
      } else if (d == 1) {
      } else if (o < 0 || d < 0) {
        o = -1;
      } else {
        shape_error("inputs have incompatible shapes: " + shapes_to_string(in) + " (axis -" + std::to_string(k) +
                    " has " + std::to_string(o) + " and " + std::to_string(d) + ")");
      }
    }
  }
  out.insert(out.begin(), batch);
  return {Shape(std::move(out))};
}

bool Merge::same_shapes(std::span<const Tensor> inputs, const Shape& out) {
  for (const Tensor& x : inputs)
    if (x.shape() != out) return false;
  return true;
}

void Merge::apply(backend::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& y) {
  const Shape& out = y.shape();
  backend::get(y.device())
      .broadcast_binary(op, a.data<float>(), b.data<float>(), y.data<float>(),
                        backend::make_broadcast(out, expanded(a.shape(), out.rank()), b.shape(), "merge"));
}

void Merge::combine(backend::BinaryOp op, std::span<const Tensor> inputs, const Tensor& y) {
  const Shape& out = y.shape();
  backend::Backend& be = backend::get(y.device());
  be.broadcast_binary(op, inputs[0].data<float>(), inputs[1].data<float>(), y.data<float>(),
                      backend::make_broadcast(out, expanded(inputs[0].shape(), out.rank()),
                                              expanded(inputs[1].shape(), out.rank()), "merge"));
  for (std::size_t i = 2; i < inputs.size(); ++i)
    be.broadcast_binary(op, y.data<float>(), inputs[i].data<float>(), y.data<float>(),
                        backend::make_broadcast(out, out, expanded(inputs[i].shape(), out.rank()), "merge"));
}

void Merge::reduce_to(const Tensor& dy, Tensor dx) {
  const Shape& out = dy.shape();
  if (dx.shape() == out) {
    if (dx.data<float>() != dy.data<float>()) dx.copy_from(dy);
    return;
  }
  backend::sum_to(backend::get(dy.device()), dy.data<float>(), out, dx.data<float>(), expanded(dx.shape(), out.rank()),
                  "merge");
}

void Merge::select_backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  const Tensor& y = ctx.outputs[0];
  backend::Backend& be = backend::get(dy.device());
  const Index n = dy.numel();
  Tensor claimed(dy.shape(), DType::float32, dy.device()), mine(dy.shape(), DType::float32, dy.device()),
      scratch(dy.shape(), DType::float32, dy.device());
  claimed.zero();
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    apply(backend::BinaryOp::equal, ctx.inputs[i], y, mine);                      // x_i == y
    be.mul(mine.data<float>(), claimed.data<float>(), scratch.data<float>(), n);  // ... and not taken before
    be.sub(mine.data<float>(), scratch.data<float>(), mine.data<float>(), n);
    be.add(claimed.data<float>(), mine.data<float>(), claimed.data<float>(), n);
    if (!ctx.grad_inputs[i].defined()) continue;
    be.mul(dy.data<float>(), mine.data<float>(), scratch.data<float>(), n);
    reduce_to(scratch, ctx.grad_inputs[i]);
  }
}

}  // namespace tower::layers
