#pragma once
// Embedding (keras.layers.Embedding): row `id` of a table for each id. Input ids of any shape [N, ...] -> output
// [N, ..., output_dim]. Weight: embeddings [input_dim, output_dim] (Keras' name and layout).
//
// Ids are integers: an int32 or int64 tensor, or float32 holding integers (a float id is truncated toward zero, as
// Keras casts it). A model's inputs reach its layers as float32 (the plan stages every input as float32), which
// holds every integer up to 2^24 exactly: input_dim is therefore at most 2^24 (16,777,216), and the constructor
// throws std::invalid_argument above it. A negative id counts from the end of the table (keras.ops.take); an id
// outside [-input_dim, input_dim) throws std::invalid_argument naming the layer, the id and its position.
// The gradient with respect to the table adds up the rows of repeated ids; the ids get no gradient.
//
// mask_zero: id 0 is padding, the output's mask (Layer::compute_mask) is ids != 0, which the layers after it and the
// losses and metrics honour. Weight constraints and LoRA are not supported.
#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct EmbeddingOptions {
  int input_dim = 0;
  int output_dim = 0;
  initializers::Initializer embeddings_initializer = "uniform";  // RandomUniform(-0.05, 0.05)
  regularizers::Regularizer embeddings_regularizer;
  bool mask_zero = false;
  std::string name;
  template <class V> void visit(V&& v) {
    v("input_dim", input_dim);
    v("output_dim", output_dim);
    v("embeddings_initializer", embeddings_initializer);
    v("embeddings_regularizer", embeddings_regularizer);
    v("mask_zero", mask_zero);
    v("name", name);
  }
};

class EmbeddingImpl final : public CustomLayer {
 public:
  using Options = EmbeddingOptions;
  // Throws std::invalid_argument if input_dim or output_dim <= 0 or input_dim > 2^24.
  explicit EmbeddingImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& embeddings() const { return embeddings_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  bool supports_masking() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr embeddings_;
};

class Embedding : public LayerHolder<EmbeddingImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
