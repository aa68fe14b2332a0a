#pragma once
// LocalResponseNormalization: TensorFlow's tf.nn.local_response_normalization (tf.nn.lrn) as a layer, over the
// last (channel) axis. For each position and channel d, with r = depth_radius,
//   sqr_sum[d] = sum of x[..., k]^2 for k in [d - r, d + r], clipped to the channels that exist
//   y[..., d]  = x[..., d] / (bias + alpha * sqr_sum[d])^beta
// with TensorFlow's defaults (depth_radius 5, bias 1, alpha 1, beta 0.5); AlexNet and TensorFlow's CIFAR-10 model
// use it after their first convolutions. Any input of rank >= 2 with the channels last (NHWC images); the output
// has the input's shape. No weights. The backward is TensorFlow's LRNGrad.
#include "api/backend/backend.h"
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct LocalResponseNormalizationOptions {
  int depth_radius = 5;
  float bias = 1.f;
  float alpha = 1.f;
  float beta = 0.5f;
  std::string name;
  template <class V> void visit(V&& v) {
    v("depth_radius", depth_radius);
    v("bias", bias);
    v("alpha", alpha);
    v("beta", beta);
    v("name", name);
  }
};

class LocalResponseNormalizationImpl final : public Layer {
 public:
  using Options = LocalResponseNormalizationOptions;
  // Throws std::invalid_argument naming the layer and the value for a negative depth_radius or a bias, alpha or
  // beta that is not finite.
  explicit LocalResponseNormalizationImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError for an input of rank < 2.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return true; }
  bool backward_needs_outputs() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  backend::LrnParams params_;
};

class LocalResponseNormalization : public LayerHolder<LocalResponseNormalizationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
