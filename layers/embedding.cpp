#include "layers/embedding.h"

#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

namespace {
constexpr int kMaxExactId = 1 << 24;  // float32 holds every integer up to 2^24
}  // namespace

EmbeddingImpl::EmbeddingImpl(Options options) : CustomLayer("Embedding", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.input_dim <= 0)
    throw std::invalid_argument(where() + "input_dim must be positive, got " + std::to_string(options_.input_dim));
  if (options_.output_dim <= 0)
    throw std::invalid_argument(where() + "output_dim must be positive, got " + std::to_string(options_.output_dim));
  if (options_.input_dim > kMaxExactId)
    throw std::invalid_argument(where() + "input_dim " + std::to_string(options_.input_dim) +
                                " is above 2^24: ids reach the layer as float32, which holds integers exactly only "
                                "up to 2^24");
}

std::vector<SymbolicTensor> EmbeddingImpl::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                        const std::vector<SymbolicTensor>&) const {
  if (!options_.mask_zero) return {SymbolicTensor()};
  return {mask_op("EmbeddingMask", {inputs[0]}, [](const std::vector<Tensor>& ids) {
    const Tensor x = ids[0].dtype() == DType::float32 ? ids[0] : ops::cast(ids[0], DType::float32);
    return ops::not_equal(x, ops::scalar(0.f, x.device()));
  })};
}

std::vector<Shape> EmbeddingImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() < 1) shape_error("expects ids with a batch axis, got shape " + in[0].to_string());
  std::vector<Index> dims = in[0].dims();
  dims.push_back(options_.output_dim);
  return {Shape(dims)};
}

void EmbeddingImpl::build(const std::vector<Shape>&) {
  embeddings_ = add_weight("embeddings", {options_.input_dim, options_.output_dim}, options_.embeddings_initializer,
                           true, options_.embeddings_regularizer);
}

std::vector<Tensor> EmbeddingImpl::call(const std::vector<Tensor>& inputs, bool) {
  try {
    return {ops::take(embeddings_->value, inputs[0], 0)};
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where() + e.what());
  }
}

TOWER_REGISTER_LAYER(EmbeddingImpl, "Embedding");

}  // namespace tower::layers
