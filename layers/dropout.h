#pragma once
// Dropout (keras.layers.Dropout): in training, each element is zeroed with probability `rate` and the rest
// are scaled by 1 / (1 - rate); in inference the layer is the identity. Any input shape; no weights.
// The mask of a training step derives from (seed, step, replica id), as tf.distribute derives per-replica seeds:
// the seed is `seed` when given, else the plan's (StepValues::seed); the step is the plan's step count
// (StepValues::step), part of the training state that BackupAndRestore saves, so a resumed run draws the masks an
// uninterrupted one draws; the replica id is the replica's index in sync (ForwardContext::replica; 0 without a
// strategy), so each replica, on any worker, applies its own mask. The layer's position among the plan's random
// layers and the input's size are mixed in too, so two uses of one layer, or plans for other batch sizes, draw
// other masks. A seeded layer thus draws the same sequence of masks in every run, with any number of threads.
// The seed of each training forward is one of the plan's step values (engine/step_values.h): the plan draws it
// before the step and the mask op reads it from device memory, so a step captured as a CUDA graph draws new masks
// on every replay.
#include <cstdint>
#include <optional>

#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct DropoutOptions {
  float rate = 0.f;
  std::optional<std::int64_t> seed;
  std::string name;
  template <class V> void visit(V&& v) {
    v("rate", rate);
    v("seed", seed);
    v("name", name);
  }
};

class DropoutImpl final : public Layer {
 public:
  using Options = DropoutOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument unless 0 <= rate < 1.
  explicit DropoutImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool has_training_behavior() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Dropout : public LayerHolder<DropoutImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
