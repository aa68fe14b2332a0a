#pragma once
// BatchNormalization (keras.layers.BatchNormalization), normalising over the last axis (channels of NHWC).
// Input [..., channels] (rank >= 2) -> the same shape. Weights, in Keras' order: gamma [channels] (when
// scale), beta [channels] (when center), moving_mean and moving_variance [channels] (non-trainable).
//
//   training (a training call of a trainable layer): y = gamma * (x - mean) / sqrt(var + epsilon) + beta with
//     the batch mean and biased variance over every axis but the last; then
//     moving_mean = moving_mean * momentum + mean * (1 - momentum), and the same for moving_variance with
//     the biased batch variance (Keras 3).
//   inference, or a frozen layer (trainable = false, even in a training call, as Keras does for
//     fine-tuning): the same with moving_mean and moving_variance; backward is the gradient of that affine
//     map, so a frozen layer still passes gradients to the layers before it.
//
// Only axis = -1 (or its positive equivalent) is supported: another axis throws std::invalid_argument when
// the layer is called.
//
// Under a distribution strategy (a plan whose layers get a ReplicaContext):
//   batch statistics are each replica's own by default (tf.distribute's); with synchronized = true and more
//     than one replica in the step they are the global batch's: the replicas' per-channel sums of x and x^2
//     and their row counts are summed over replicas (ReplicaContext::all_reduce_sum), mean = sum / count and
//     variance = max(sum of squares / count - mean^2, 0) (Keras' SyncBN), and backward sums the per-channel
//     sums of dy and dy * x_hat the same way, so N replicas compute the gradient one replica computes on the
//     whole batch. The sums are taken on the input's device (Backend::batch_norm_sums and the ops after it) and
//     added over the replicas there (ReplicaContext::all_reduce_sum with the device), on CPUs and GPUs alike.
//   the moving statistics are updated by the first replica only, from its batch statistics (the global ones
//     when synchronized), and every replica reads the same values. That is what Keras 3 on tf.distribute
//     keeps: its moving statistics are per-replica copies (aggregation "none") and the weights a model reports
//     are the first replica's.
// A synchronized layer computes its training statistics and gradients with those double sums on one replica and
// without a strategy too, so one replica and N replicas give the same results to rounding. The backend's batch-norm
// op that an unsynchronized layer uses (oneDNN on the CPU) accumulates in float, which for near-constant channels
// (|mean| much larger than the standard deviation, as ReLU6-saturated inputs give) loses digits of x - mean that
// deep stacks such as MobileNetV2 amplify to relative differences of about 1e-2 in the first layers' gradients.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct BatchNormalizationOptions {
  int axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  initializers::Initializer beta_initializer = "zeros";
  initializers::Initializer gamma_initializer = "ones";
  initializers::Initializer moving_mean_initializer = "zeros";
  initializers::Initializer moving_variance_initializer = "ones";
  regularizers::Regularizer beta_regularizer;
  regularizers::Regularizer gamma_regularizer;
  bool synchronized = false;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("axis", axis);
    v("momentum", momentum);
    v("epsilon", epsilon);
    v("center", center);
    v("scale", scale);
    v("beta_initializer", beta_initializer);
    v("gamma_initializer", gamma_initializer);
    v("moving_mean_initializer", moving_mean_initializer);
    v("moving_variance_initializer", moving_variance_initializer);
    v("beta_regularizer", beta_regularizer);
    v("gamma_regularizer", gamma_regularizer);
    v("synchronized", synchronized);
    v("name", name);
  }
};

class BatchNormalizationImpl final : public Layer {
 public:
  using Options = BatchNormalizationOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument for a negative epsilon.
  explicit BatchNormalizationImpl(Options options);
  const Options& options() const { return options_; }
  // Null when scale (gamma) or center (beta) is off.
  const VariablePtr& gamma() const { return gamma_; }
  const VariablePtr& beta() const { return beta_; }
  const VariablePtr& moving_mean() const { return moving_mean_; }
  const VariablePtr& moving_variance() const { return moving_variance_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool has_training_behavior() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // Forward and backward of a training call with statistics summed over the replicas of ctx.replica.
  void forward_synchronized(const ForwardContext& ctx, const float* gamma, const float* beta);
  void backward_synchronized(const BackwardContext& ctx, const float* gamma, Tensor* dgamma, Tensor* dbeta);
  Options options_;
  VariablePtr gamma_, beta_, moving_mean_, moving_variance_;
};

class BatchNormalization : public LayerHolder<BatchNormalizationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
