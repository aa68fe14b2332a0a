#include "layers/repeat_vector.h"

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

RepeatVectorImpl::RepeatVectorImpl(Options options)
    : Layer("RepeatVector", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.n <= 0) throw std::invalid_argument(where() + "n must be positive, got " + std::to_string(options_.n));
}

std::vector<Shape> RepeatVectorImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() != 2) shape_error("expects a 2-D input (batch, features), got shape " + in[0].to_string());
  return {Shape{in[0][0], options_.n, in[0][1]}};
}

// y[b, i, f] = x[b, f]: x read with stride 0 along the repeats.
void RepeatVectorImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Index batch = x.dim(0), n = options_.n, features = x.dim(1);
  backend::StridedCopy s;
  s.rank = 3;
  const Index dims[3] = {batch, n, features}, xs[3] = {features, 0, 1}, ys[3] = {n * features, features, 1};
  for (int k = 0; k < 3; ++k) {
    s.dims[k] = dims[k];
    s.x_strides[k] = xs[k];
    s.y_strides[k] = ys[k];
  }
  backend::get(x.device()).strided_copy(x.data<float>(), ctx.outputs[0].data<float>(), s);
}

void RepeatVectorImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  backend::sum_to(backend::get(dy.device()), dy.data<float>(), dy.shape(), dx.data<float>(),
                  Shape{dx.dim(0), 1, dx.dim(1)}, where());
}

TOWER_REGISTER_LAYER(RepeatVectorImpl, "RepeatVector");

}  // namespace tower::layers
