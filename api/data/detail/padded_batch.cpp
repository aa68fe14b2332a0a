#include "api/data/detail/padded_batch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tower::data::detail {
namespace {

const std::string kPadded = "Dataset.padded_batch: ";

// Fills `t` with `value` unless t's integer dtype cannot hold it exactly; false then.
template <class T> bool fill_exact(const Tensor& t, double value) {
  if constexpr (std::is_integral_v<T>) {
    if (value != std::floor(value) || value < static_cast<double>(std::numeric_limits<T>::lowest()) ||
        value >= static_cast<double>(std::numeric_limits<T>::max()) + 1.0)
      return false;
  }
  std::fill_n(t.data<T>(), t.numel(), static_cast<T>(value));
  return true;
}

void fill_with(const Tensor& t, double value, std::size_t component) {
  bool exact = false;
  switch (t.dtype()) {
    case DType::float32: exact = fill_exact<float>(t, value); break;
    case DType::int32: exact = fill_exact<std::int32_t>(t, value); break;
    case DType::int64: exact = fill_exact<std::int64_t>(t, value); break;
    case DType::uint8: exact = fill_exact<std::uint8_t>(t, value); break;
  }
  if (!exact) {
    std::ostringstream message;
    message << kPadded << "padding value " << value << " for component " << component << " does not fit its dtype "
            << dtype_name(t.dtype());
    throw std::invalid_argument(message.str());
  }
}

// The padded shape of component c of a batch: the given one (or all -1) with each -1 resolved.
Shape target_shape(const std::vector<Element>& elements, const std::vector<Index>& numbers, std::size_t c,
                   const Padding& padding) {
  const Shape& first = elements[0][c].shape();
  Shape target = padding.shapes.empty() ? Shape(std::vector<Index>(first.dims().size(), -1)) : padding.shapes[c];
  if (target.rank() != first.rank())
    throw std::invalid_argument(kPadded + "padded shape " + target.to_string() + " of rank " +
                                std::to_string(target.rank()) + " for component " + std::to_string(c) + " of rank " +
                                std::to_string(first.rank()) + " (element " + std::to_string(numbers[0]) + ": " +
                                first.to_string() + ")");
  for (int d = 0; d < target.rank(); ++d) {
    if (target[d] == -1) target[d] = padding.unknown_size;
    if (target[d] != -1) continue;
    for (const Element& e : elements) target[d] = std::max(target[d], e[c].dim(d));
  }
  for (std::size_t i = 0; i < elements.size(); ++i)
    for (int d = 0; d < target.rank(); ++d)
      if (elements[i][c].dim(d) > target[d])
        throw std::invalid_argument(kPadded + "element " + std::to_string(numbers[i]) + " has component " +
                                    std::to_string(c) + " of shape " + elements[i][c].shape().to_string() +
                                    ", of size " + std::to_string(elements[i][c].dim(d)) + " in dimension " +
                                    std::to_string(d) + ", longer than its padded shape " + target.to_string());
  return target;
}

// Copies `element` (contiguous) to the start of `slot`, whose dimensions are each at least as long.
void copy_padded(const Tensor& element, char* slot, const Shape& slot_shape) {
  const std::size_t item = dtype_size(element.dtype());
  const int rank = element.rank();
  if (element.numel() == 0) return;
  if (rank == 0) {
    std::memcpy(slot, element.raw_data(), item);
    return;
  }
  // Row-major strides (in bytes) of the slot; the element is copied one innermost row at a time.
  std::vector<std::size_t> strides(static_cast<std::size_t>(rank), item);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * static_cast<std::size_t>(slot_shape[d + 1]);
  const std::size_t row_bytes = static_cast<std::size_t>(element.dim(rank - 1)) * item;
  const Index rows = element.numel() / element.dim(rank - 1);
  const char* src = static_cast<const char*>(element.raw_data());
  std::vector<Index> at(static_cast<std::size_t>(rank), 0);
  for (Index r = 0; r < rows; ++r) {
    std::size_t offset = 0;
    for (int d = 0; d + 1 < rank; ++d) offset += static_cast<std::size_t>(at[d]) * strides[d];
    std::memcpy(slot + offset, src + static_cast<std::size_t>(r) * row_bytes, row_bytes);
    for (int d = rank - 2; d >= 0 && ++at[d] == element.dim(d); --d) at[d] = 0;
  }
}

}  // namespace

Element pad_and_stack(const std::vector<Element>& elements, const std::vector<Index>& numbers, const Padding& padding) {
  const std::size_t components = elements[0].size();
  if (!padding.shapes.empty() && padding.shapes.size() != components)
    throw std::invalid_argument(kPadded + std::to_string(padding.shapes.size()) + " padded shapes for elements of " +
                                std::to_string(components) + " components");
  if (!padding.values.empty() && padding.values.size() != components)
    throw std::invalid_argument(kPadded + std::to_string(padding.values.size()) + " padding values for elements of " +
                                std::to_string(components) + " components");
  Element batch;
  batch.reserve(components);
  for (std::size_t c = 0; c < components; ++c) {
    const Shape slot_shape = target_shape(elements, numbers, c, padding);
    std::vector<Index> dims{static_cast<Index>(elements.size())};
    dims.insert(dims.end(), slot_shape.begin(), slot_shape.end());
    Tensor out{Shape(std::move(dims)), elements[0][c].dtype()};
    fill_with(out, padding.values.empty() ? 0.0 : padding.values[c], c);
    const std::size_t slot_bytes = static_cast<std::size_t>(slot_shape.numel()) * dtype_size(out.dtype());
    char* dst = static_cast<char*>(out.raw_data());
    for (std::size_t i = 0; i < elements.size(); ++i) copy_padded(elements[i][c], dst + i * slot_bytes, slot_shape);
    batch.push_back(std::move(out));
  }
  return batch;
}

namespace {

class BucketIterator : public Iterator {
 public:
  BucketIterator(std::unique_ptr<Iterator> input, std::shared_ptr<const Buckets> buckets)
      : input_(std::move(input)), buckets_(std::move(buckets)), elements_(buckets_->batch_sizes.size()),
        numbers_(buckets_->batch_sizes.size()) {}

  std::optional<Element> next() override {
    if (failed_) return std::nullopt;
    failed_ = true;  // an exception from the input, the length function or a batch ends the pass
    std::optional<Element> batch = next_batch();
    failed_ = false;
    return batch;
  }

 private:
  std::optional<Element> next_batch() {
    while (!input_done_) {
      std::optional<Element> element = input_->next();
      if (!element) {
        input_done_ = true;
        break;
      }
      const std::size_t b = bucket_of(*element);
      elements_[b].push_back(std::move(*element));
      numbers_[b].push_back(seen_++);
      if (static_cast<Index>(elements_[b].size()) == buckets_->batch_sizes[b]) return emit(b);
    }
    // tf.data's group_by_window flushes what is left in the order of the bucket ids.
    for (; flushed_ < elements_.size(); ++flushed_)
      if (!elements_[flushed_].empty() && !buckets_->drop_remainder) return emit(flushed_++);
    return std::nullopt;
  }

  std::size_t bucket_of(const Element& element) const {
    const Index length = buckets_->element_length_func(element);
    const std::vector<Index>& boundaries = buckets_->boundaries;
    const auto b = static_cast<std::size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), length) -
                                            boundaries.begin());
    if (buckets_->pad_to_bucket_boundary && !buckets_->no_padding && b == boundaries.size())
      throw std::invalid_argument("Dataset.bucket_by_sequence_length: element " + std::to_string(seen_) +
                                  " has length " + std::to_string(length) + "; with pad_to_bucket_boundary, " +
                                  "elements must have length < max(bucket_boundaries) = " +
                                  std::to_string(boundaries.back()));
    return b;
  }

  Element emit(std::size_t b) {
    Padding padding = buckets_->padding;
    // no_padding overrides pad_to_bucket_boundary, and then the last bucket (b == boundaries.size()) takes elements
    // of any length: it has no boundary to pad to.
    if (buckets_->pad_to_bucket_boundary && !buckets_->no_padding) padding.unknown_size = buckets_->boundaries[b] - 1;
    Element batch = batch_elements(elements_[b], numbers_[b], buckets_->no_padding ? nullptr : &padding);
    elements_[b].clear();
    numbers_[b].clear();
    return batch;
  }

  std::unique_ptr<Iterator> input_;
  std::shared_ptr<const Buckets> buckets_;
  std::vector<std::vector<Element>> elements_;  // per bucket
  std::vector<std::vector<Index>> numbers_;     // their input element numbers, for errors
  Index seen_ = 0;
  bool input_done_ = false;
  std::size_t flushed_ = 0;
  bool failed_ = false;
};

class BucketNode : public DatasetNode {
 public:
  BucketNode(NodePtr input, Buckets buckets)
      : input_(std::move(input)), buckets_(std::make_shared<const Buckets>(std::move(buckets))) {}
  const DatasetNode* input() const override { return input_.get(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<BucketIterator>(input_->make_iterator(), buckets_);
  }
  Index cardinality() const override { return UNKNOWN_CARDINALITY; }

 private:
  NodePtr input_;
  std::shared_ptr<const Buckets> buckets_;
};

}  // namespace

NodePtr bucket_by_sequence_length_node(NodePtr input, Buckets buckets) {
  return std::make_shared<BucketNode>(std::move(input), std::move(buckets));
}

}  // namespace tower::data::detail
