#include "api/losses/cosine_similarity.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

CosineSimilarityImpl::CosineSimilarityImpl(Options options)
    : BackendLoss("CosineSimilarity", options.name), options_(std::move(options)) {}

LossPtr CosineSimilarityImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<CosineSimilarityImpl>(arguments, kFixed, "CosineSimilarity");
}

Config CosineSimilarityImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

Shape CosineSimilarityImpl::per_example_shape(const Shape& y_pred) const {
  const int axis = options_.axis;
  if (axis != -1 && (y_pred.rank() < 2 || axis != y_pred.rank() - 1))
    throw std::invalid_argument(name() + ": axis " + std::to_string(axis) + " of y_pred of shape " +
                                y_pred.to_string() + " is not the last axis, the only one Tower reduces");
  return Loss::per_example_shape(y_pred);
}

}  // namespace tower::losses
