#pragma once
// GroupNormalization (keras.layers.GroupNormalization): the channels of `axis` split into `groups` groups of
// consecutive channels; each example normalized over each group's channels and all other non-batch axes, then
// scaled and shifted per channel:
//   y = (x - mean) * rsqrt(var + epsilon) * gamma + beta      mean and biased variance per (example, group)
// computed as Keras computes it. groups = -1 means one group per channel (instance normalization). Any input
// [N, ...] of rank >= 2; the output has the input's shape. `axis` counts the batch axis as 0 (negative from the
// end), never the batch axis; its size must be known and divisible by groups.
// Weights, in Keras' order: gamma (when scale), then beta (when center), each [channels].
// Computed in float32 with tower::ops. Weight constraints are not supported.
#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct GroupNormalizationOptions {
  int groups = 32;
  int axis = -1;
  float epsilon = 1e-3f;
  bool center = true;
  bool scale = true;
  initializers::Initializer beta_initializer = "zeros";
  initializers::Initializer gamma_initializer = "ones";
  regularizers::Regularizer beta_regularizer;
  regularizers::Regularizer gamma_regularizer;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("groups", groups);
    v("axis", axis);
    v("epsilon", epsilon);
    v("center", center);
    v("scale", scale);
    v("beta_initializer", beta_initializer);
    v("gamma_initializer", gamma_initializer);
    v("beta_regularizer", beta_regularizer);
    v("gamma_regularizer", gamma_regularizer);
    v("name", name);
  }
};

class GroupNormalizationImpl final : public CustomLayer {
 public:
  using Options = GroupNormalizationOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument if groups is 0 or below -1, or epsilon is negative.
  explicit GroupNormalizationImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& gamma() const { return gamma_; }  // null without scale
  const VariablePtr& beta() const { return beta_; }    // null without center

  void build(const std::vector<Shape>& input_shapes) override;
  // Throws ShapeError for an input of rank < 2, an axis out of range or the batch axis, an axis of unknown size,
  // more groups than channels, or channels not divisible by groups.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The normalized axis of an input of `shape`, non-negative, after the checks above.
  int axis_for(const Shape& shape) const;
  Index groups_for(Index channels) const { return options_.groups == -1 ? channels : options_.groups; }

  Options options_;
  VariablePtr gamma_, beta_;
};

class GroupNormalization : public LayerHolder<GroupNormalizationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
