#include "layers/batch_normalization.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {

struct BatchNormState : LayerState {
  Index rows = -1;
  Device device;
  std::unique_ptr<backend::BatchNormOp> op;
  Tensor ones, zeros;              // [channels]: gamma without scale, beta without center, and inference backward
  Tensor mean, variance;           // [channels]: the batch statistics of the last training forward
  Tensor dgamma_sink, dbeta_sink;  // [channels]: gradients the op writes but nobody wants
  Tensor scratch;                  // [rows, channels]: an unwanted dx, or x_hat * dy in inference backward
  bool batch_statistics = false;   // whether the last forward normalised with the batch statistics
  bool synchronized = false;       // ... summed over the replicas of a strategy (SyncBN)
  // SyncBN, on the input's device: [sum x | sum x^2 | rows] over every replica after the forward, and
  // [sum dy | sum dy * x_hat] in backward.
  std::shared_ptr<Storage> sums, grad_sums;
};

// `buffer` as `count` doubles of `device`.
double* doubles(std::shared_ptr<Storage>& buffer, Index count, Device device) {
  const std::size_t bytes = static_cast<std::size_t>(std::max<Index>(count, 1)) * sizeof(double);
  if (!buffer || buffer->bytes() != bytes || buffer->device() != device)
    buffer = std::make_shared<Storage>(bytes, device);
  return static_cast<double*>(buffer->data());
}

void ensure_tensor(Tensor& t, const Shape& shape, Device device) {
  if (!t.defined() || t.shape() != shape || !(t.device() == device)) t = Tensor(shape, DType::float32, device);
}

// The op and per-channel buffers for input x, made on the first call and again only when the shape changes.
BatchNormState& prepare(const ForwardContext& ctx, Index channels, float epsilon) {
  const Tensor& x = ctx.inputs[0];
  BatchNormState& st = ctx.get_state<BatchNormState>();
  const Index rows = x.numel() / channels;
  if (st.op && st.rows == rows && st.device == x.device()) return st;
  backend::Backend& be = backend::get(x.device());
  st.op = be.make_batch_norm({.rows = rows, .channels = channels, .epsilon = epsilon});
  st.rows = rows;
  st.device = x.device();
  const Shape c{channels};
  for (Tensor* t : {&st.ones, &st.zeros, &st.mean, &st.variance, &st.dgamma_sink, &st.dbeta_sink})
    ensure_tensor(*t, c, x.device());
  be.fill(st.ones.data<float>(), channels, 1.f);
  be.fill(st.zeros.data<float>(), channels, 0.f);
  return st;
}

}  // namespace

BatchNormalizationImpl::BatchNormalizationImpl(Options options)
    : Layer("BatchNormalization", options.name), options_(std::move(options)) {
  options_.name = name();
  if (!(options_.epsilon >= 0.0))
    throw std::invalid_argument(where() + "epsilon must be >= 0, got " + std::to_string(options_.epsilon));
}

std::vector<Shape> BatchNormalizationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() < 2) shape_error("expects input of rank >= 2, got shape " + s.to_string());
  const int axis = options_.axis < 0 ? options_.axis + s.rank() : options_.axis;
  if (axis != s.rank() - 1)
    throw std::invalid_argument(where() + "only the last axis (axis=-1) is supported, got axis=" +
                                std::to_string(options_.axis) + " for input shape " + s.to_string());
  if (s[-1] <= 0) shape_error("the last axis of the input must be known, got shape " + s.to_string());
  if (moving_mean_ && s[-1] != moving_mean_->value.dim(0))
    shape_error("expected axis -1 of the input to have value " + std::to_string(moving_mean_->value.dim(0)) +
                ", got input shape " + s.to_string());
  return {s};
}

void BatchNormalizationImpl::build(const std::vector<Shape>& in) {
  const Shape c{in[0][-1]};
  if (options_.scale) gamma_ = add_weight("gamma", c, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center) beta_ = add_weight("beta", c, options_.beta_initializer, true, options_.beta_regularizer);
  moving_mean_ = add_weight("moving_mean", c, options_.moving_mean_initializer, false);
  moving_variance_ = add_weight("moving_variance", c, options_.moving_variance_initializer, false);
}

void BatchNormalizationImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Index channels = moving_mean_->value.numel();
  BatchNormState& st = prepare(ctx, channels, static_cast<float>(options_.epsilon));
  const float* gamma = (gamma_ ? gamma_->value : st.ones).data<float>();
  const float* beta = (beta_ ? beta_->value : st.zeros).data<float>();
  float* y = ctx.outputs[0].data<float>();
  float* moving_mean = moving_mean_->value.data<float>();
  float* moving_variance = moving_variance_->value.data<float>();
  // Keras: batch statistics only in a training call of a trainable layer.
  st.batch_statistics = ctx.training && trainable();
  if (!st.batch_statistics) {
    st.op->forward_inference(x.data<float>(), gamma, beta, moving_mean, moving_variance, y);
    return;
  }
  // A synchronized layer takes its statistics from the double sums on one replica too, so one replica and N
  // replicas normalise with the same values (see the header).
  st.synchronized = options_.synchronized;
  if (st.synchronized)
    forward_synchronized(ctx, gamma, beta);
  else
    st.op->forward_training(x.data<float>(), gamma, beta, y, st.mean.data<float>(), st.variance.data<float>());
  if (st.rows == 0) return;  // a replica without examples has no statistics to fold in
  // Under a strategy the first replica alone updates the moving statistics (see the header).
  if (ctx.replica && ctx.replica->replica_id_in_sync_group() != 0) return;
  backend::Backend& be = backend::get(x.device());
  const float m = static_cast<float>(options_.momentum);
  be.axpby(1.f - m, st.mean.data<float>(), m, moving_mean, channels);
  be.axpby(1.f - m, st.variance.data<float>(), m, moving_variance, channels);
}

void BatchNormalizationImpl::backward(const BackwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.grad_outputs[0];
  Tensor& dx = ctx.grad_inputs[0];
  BatchNormState& st = ctx.get_state<BatchNormState>();
  if (!st.op) throw std::logic_error(where() + "backward without a preceding forward");
  backend::Backend& be = backend::get(dy.device());
  const Index channels = moving_mean_->value.numel(), rows = st.rows;
  const float* gamma = (gamma_ ? gamma_->value : st.ones).data<float>();
  Tensor* dgamma = nullptr;
  Tensor* dbeta = nullptr;
  if (!ctx.weight_grads.empty()) {  // parallel to trainable_weights(): gamma, then beta, each if present
    std::size_t k = 0;
    if (gamma_) dgamma = &ctx.weight_grads[k++];
    if (beta_) dbeta = &ctx.weight_grads[k++];
  }

  if (st.batch_statistics && st.synchronized) {
    backward_synchronized(ctx, gamma, dgamma, dbeta);
    return;
  }
  if (st.batch_statistics) {
    if (!dx.defined()) ensure_tensor(st.scratch, dy.shape(), dy.device());
    st.op->backward(x.data<float>(), dy.data<float>(), gamma, st.mean.data<float>(), st.variance.data<float>(),
                    (dx.defined() ? dx : st.scratch).data<float>(), (dgamma ? *dgamma : st.dgamma_sink).data<float>(),
                    (dbeta ? *dbeta : st.dbeta_sink).data<float>());
    return;
  }
  // Inference: y = gamma * (x - mean) / sqrt(var + eps) + beta with constant statistics, so
  // dx = gamma * dy / sqrt(var + eps), which is the inference forward of dy with zero mean and zero beta;
  // dbeta = sum dy; dgamma = sum dy * x_hat, with x_hat the inference forward of x with gamma 1, beta 0.
  const float* zeros = st.zeros.data<float>();
  const float* moving_mean = moving_mean_->value.data<float>();
  const float* moving_variance = moving_variance_->value.data<float>();
  if (dx.defined()) st.op->forward_inference(dy.data<float>(), gamma, zeros, zeros, moving_variance, dx.data<float>());
  if (dbeta) be.bias_grad(dy.data<float>(), dbeta->data<float>(), rows, channels);
  if (dgamma) {
    ensure_tensor(st.scratch, dy.shape(), dy.device());
    float* xhat = st.scratch.data<float>();
    st.op->forward_inference(x.data<float>(), st.ones.data<float>(), zeros, moving_mean, moving_variance, xhat);
    be.mul(xhat, dy.data<float>(), xhat, rows * channels);
    be.bias_grad(xhat, dgamma->data<float>(), rows, channels);
  }
}

// The replicas' per-channel sums of x and x^2 and their row counts, added over the replicas on the device (when
// the layer runs under a strategy), give the global batch's mean and biased variance.
void BatchNormalizationImpl::forward_synchronized(const ForwardContext& ctx, const float* gamma, const float* beta) {
  const Tensor& x = ctx.inputs[0];
  BatchNormState& st = ctx.get_state<BatchNormState>();
  backend::Backend& be = backend::get(x.device());
  const Index channels = st.mean.numel();
  double* sums = doubles(st.sums, 2 * channels + 1, x.device());
  be.batch_norm_sums(x.data<float>(), st.rows, channels, sums);
  if (ctx.replica) ctx.replica->all_reduce_sum(sums, static_cast<std::size_t>(2 * channels + 1), x.device());
  float* mean = st.mean.data<float>();
  float* variance = st.variance.data<float>();
  be.batch_norm_statistics(sums, channels, mean, variance);
  st.op->forward_inference(x.data<float>(), gamma, beta, mean, variance, ctx.outputs[0].data<float>());
}

// dx = gamma / sqrt(var + eps) * (dy - sum(dy) / count - x_hat * sum(dy * x_hat) / count), the sums over every
// replica's rows; dgamma and dbeta are this replica's own sums, which the strategy adds with the other gradients.
void BatchNormalizationImpl::backward_synchronized(const BackwardContext& ctx, const float* gamma, Tensor* dgamma,
                                                   Tensor* dbeta) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.grad_outputs[0];
  Tensor& dx = ctx.grad_inputs[0];
  BatchNormState& st = ctx.get_state<BatchNormState>();
  backend::Backend& be = backend::get(dy.device());
  const Index channels = st.mean.numel(), rows = st.rows;
  const float epsilon = static_cast<float>(options_.epsilon);  // as the forward's batch-norm op adds it
  double* sums = doubles(st.grad_sums, 2 * channels, dy.device());
  be.batch_norm_grad_sums(x.data<float>(), dy.data<float>(), st.mean.data<float>(), st.variance.data<float>(),
                          epsilon, rows, channels, sums, (dgamma ? *dgamma : st.dgamma_sink).data<float>(),
                          (dbeta ? *dbeta : st.dbeta_sink).data<float>());
  if (ctx.replica) ctx.replica->all_reduce_sum(sums, static_cast<std::size_t>(2 * channels), dy.device());
  if (!dx.defined()) return;
  const double* count = static_cast<const double*>(st.sums->data()) + 2 * channels;
  be.batch_norm_sync_dx(x.data<float>(), dy.data<float>(), gamma, st.mean.data<float>(), st.variance.data<float>(),
                        epsilon, sums, count, rows, channels, dx.data<float>());
}

TOWER_REGISTER_LAYER(BatchNormalizationImpl, "BatchNormalization");

}  // namespace tower::layers
