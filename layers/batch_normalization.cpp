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
  double count = 0;                // SyncBN: rows over all replicas
  std::vector<double> sums, partial;  // SyncBN: per-channel sums, and per row block before they are added
};

// Per channel of a [rows, channels] tensor, two sums over the rows in double: terms(r, a, b) adds row r's terms
// to a[0, channels) and b[0, channels). Rows are cut into blocks by size alone, and the blocks' sums added in
// order, so the result does not depend on the number of threads.
template <class Terms>
void channel_sums(Index rows, Index channels, std::vector<double>& partial, double* out, const Terms& terms) {
  const Index blocks = std::clamp<Index>(rows * channels / (Index{1} << 14), 1, 64);
  const auto width = static_cast<std::size_t>(2 * channels);
  partial.assign(static_cast<std::size_t>(blocks) * width, 0.0);
#pragma omp parallel for if (blocks > 1)
  for (Index b = 0; b < blocks; ++b) {
    double* a = partial.data() + static_cast<std::size_t>(b) * width;
    for (Index r = b * rows / blocks; r < (b + 1) * rows / blocks; ++r) terms(r, a, a + channels);
  }
  std::fill(out, out + width, 0.0);
  for (Index b = 0; b < blocks; ++b)
    for (std::size_t i = 0; i < width; ++i) out[i] += partial[static_cast<std::size_t>(b) * width + i];
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
  st.synchronized = options_.synchronized && ctx.replica && ctx.replica->num_replicas_in_sync() > 1;
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

void BatchNormalizationImpl::forward_synchronized(const ForwardContext& ctx, const float* gamma, const float* beta) {
  const Tensor& x = ctx.inputs[0];
  if (!x.device().is_cpu())
    throw std::invalid_argument(where() + "synchronized batch statistics are computed on the host; the input is on " +
                                x.device().to_string());
  BatchNormState& st = ctx.get_state<BatchNormState>();
  const Index channels = st.mean.numel();
  const auto c = static_cast<std::size_t>(channels);
  const float* xp = x.data<float>();
  st.sums.resize(2 * c + 1);
  channel_sums(st.rows, channels, st.partial, st.sums.data(), [&](Index r, double* sum, double* squares) {
    const float* row = xp + r * channels;
    for (Index k = 0; k < channels; ++k) {
      const double v = row[k];
      sum[k] += v;
      squares[k] += v * v;
    }
  });
  st.sums[2 * c] = static_cast<double>(st.rows);
  ctx.replica->all_reduce_sum(st.sums.data(), st.sums.size());
  st.count = st.sums[2 * c];
  float* mean = st.mean.data<float>();
  float* variance = st.variance.data<float>();
  for (std::size_t k = 0; k < c; ++k) {
    const double m = st.sums[k] / st.count;
    mean[k] = static_cast<float>(m);
    variance[k] = static_cast<float>(std::max(st.sums[c + k] / st.count - m * m, 0.0));
  }
  st.op->forward_inference(xp, gamma, beta, mean, variance, ctx.outputs[0].data<float>());
}

// dx = gamma / sqrt(var + eps) * (dy - sum(dy) / count - x_hat * sum(dy * x_hat) / count), the sums over every
// replica's rows; dgamma and dbeta are this replica's own sums, which the strategy adds with the other gradients.
void BatchNormalizationImpl::backward_synchronized(const BackwardContext& ctx, const float* gamma, Tensor* dgamma,
                                                   Tensor* dbeta) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.grad_outputs[0];
  Tensor& dx = ctx.grad_inputs[0];
  BatchNormState& st = ctx.get_state<BatchNormState>();
  const Index channels = st.mean.numel(), rows = st.rows;
  const auto c = static_cast<std::size_t>(channels);
  const float* xp = x.data<float>();
  const float* dyp = dy.data<float>();
  const float* mean = st.mean.data<float>();
  const float* variance = st.variance.data<float>();
  // sums[0, 2c): per channel, the sums of dy and of dy * x_hat; sums[2c, 3c): 1 / sqrt(var + eps).
  std::vector<double>& sums = st.sums;
  sums.resize(3 * c);
  double* inv_std = sums.data() + 2 * c;
  const double epsilon = static_cast<float>(options_.epsilon);  // as the forward's oneDNN op adds it
  for (std::size_t k = 0; k < c; ++k) inv_std[k] = 1.0 / std::sqrt(static_cast<double>(variance[k]) + epsilon);
  channel_sums(rows, channels, st.partial, sums.data(), [&](Index r, double* sum_dy, double* sum_dy_xhat) {
    const float* xr = xp + r * channels;
    const float* dr = dyp + r * channels;
    for (Index k = 0; k < channels; ++k) {
      const double d = dr[k];
      sum_dy[k] += d;
      sum_dy_xhat[k] += d * (xr[k] - mean[k]) * inv_std[k];
    }
  });
  float* dg = (dgamma ? *dgamma : st.dgamma_sink).data<float>();
  float* db = (dbeta ? *dbeta : st.dbeta_sink).data<float>();
  for (std::size_t k = 0; k < c; ++k) {
    db[k] = static_cast<float>(sums[k]);
    dg[k] = static_cast<float>(sums[c + k]);
  }
  ctx.replica->all_reduce_sum(sums.data(), 2 * c);
  if (!dx.defined()) return;
  float* dxp = dx.data<float>();
  const double count = st.count;
#pragma omp parallel for if (rows * channels > (Index{1} << 15))
  for (Index r = 0; r < rows; ++r) {
    const float* xr = xp + r * channels;
    const float* dr = dyp + r * channels;
    float* out = dxp + r * channels;
    for (Index k = 0; k < channels; ++k) {
      const auto kk = static_cast<std::size_t>(k);
      const double xhat = (xr[k] - mean[k]) * inv_std[kk];
      out[k] = static_cast<float>(gamma[k] * inv_std[kk] * (dr[k] - sums[kk] / count - xhat * sums[c + kk] / count));
    }
  }
}

TOWER_REGISTER_LAYER(BatchNormalizationImpl, "BatchNormalization");

}  // namespace tower::layers
