#include "api/data/dataset.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "api/core/random.h"
#include "api/data/detail/background_iterators.h"
#include "api/data/detail/dataset_node.h"
#include "api/data/detail/padded_batch.h"

namespace tower::data {
namespace detail {

std::unique_ptr<RowIterator> DatasetNode::make_row_iterator() const {
  throw std::logic_error("make_row_iterator() on a dataset node that does not yield rows");
}

Element slice_element(const std::vector<Tensor>& sources, Index row) {
  Element element;
  element.reserve(sources.size());
  for (const Tensor& source : sources)
    element.push_back(source.slice(row, row + 1).reshape(source.shape().without_batch()));
  return element;
}

std::optional<Element> RowsToElements::next() {
  const std::optional<Index> row = rows_->next();
  if (!row) return std::nullopt;
  return slice_element(sources_, *row);
}

}  // namespace detail

namespace {

using detail::DatasetNode;
using detail::ItemIterator;
using detail::ItemIteratorPtr;
using detail::NodePtr;
using detail::RowIterator;

std::size_t row_bytes(const Tensor& t) {
  return static_cast<std::size_t>(t.shape().without_batch().numel()) * dtype_size(t.dtype());
}

// ---- sources -------------------------------------------------------------------------------------------------

class RangeRowIterator : public RowIterator {
 public:
  explicit RangeRowIterator(Index end) : end_(end) {}
  std::optional<Index> next() override {
    if (next_ >= end_) return std::nullopt;
    return next_++;
  }

 private:
  Index next_ = 0;
  Index end_;
};

class SlicesNode : public DatasetNode {
 public:
  explicit SlicesNode(std::vector<Tensor> components) : components_(std::move(components)) {}
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<detail::RowsToElements>(components_, make_row_iterator());
  }
  std::unique_ptr<RowIterator> make_row_iterator() const override {
    return std::make_unique<RangeRowIterator>(components_[0].dim(0));
  }
  const std::vector<Tensor>* rows() const override { return &components_; }
  Index cardinality() const override { return components_[0].dim(0); }

 private:
  std::vector<Tensor> components_;
};

class GeneratorIterator : public Iterator {
 public:
  explicit GeneratorIterator(Dataset::GeneratorFn fn) : fn_(std::move(fn)) {}
  std::optional<Element> next() override {
    if (done_) return std::nullopt;
    done_ = true;  // stays done if fn_ throws
    std::optional<Element> element = fn_();
    done_ = !element.has_value();
    return element;
  }

 private:
  Dataset::GeneratorFn fn_;
  bool done_ = false;
};

class GeneratorNode : public DatasetNode {
 public:
  explicit GeneratorNode(std::function<Dataset::GeneratorFn()> factory) : factory_(std::move(factory)) {}
  std::unique_ptr<Iterator> make_iterator() const override {
    Dataset::GeneratorFn fn = factory_();
    if (!fn) throw std::invalid_argument("Dataset.from_generator: the factory returned an empty generator");
    return std::make_unique<GeneratorIterator>(std::move(fn));
  }
  Index cardinality() const override { return UNKNOWN_CARDINALITY; }

 private:
  std::function<Dataset::GeneratorFn()> factory_;
};

// ---- map -----------------------------------------------------------------------------------------------------

class MapIterator : public Iterator {
 public:
  MapIterator(std::unique_ptr<Iterator> input, Dataset::MapFn fn) : input_(std::move(input)), fn_(std::move(fn)) {}
  std::optional<Element> next() override {
    if (done_) return std::nullopt;
    done_ = true;  // an exception from the input or fn ends the pass
    std::optional<Element> element = input_->next();
    if (!element) return std::nullopt;
    Element result = fn_(*element);
    done_ = false;
    return result;
  }

 private:
  std::unique_ptr<Iterator> input_;
  Dataset::MapFn fn_;
  bool done_ = false;
};

class MapNode : public DatasetNode {
 public:
  MapNode(NodePtr input, Dataset::MapFn fn, int threads) : input_(std::move(input)), fn_(std::move(fn)), threads_(threads) {}
  const DatasetNode* input() const override { return input_.get(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    if (threads_ == 1) return std::make_unique<MapIterator>(input_->make_iterator(), fn_);
    return std::make_unique<detail::ParallelMapIterator>(input_->make_iterator(), fn_, threads_);
  }
  Index cardinality() const override { return input_->cardinality(); }

 private:
  NodePtr input_;
  Dataset::MapFn fn_;
  int threads_;
};

// ---- shuffle -------------------------------------------------------------------------------------------------

// A seed per pass, well mixed (splitmix64) so that nearby seeds and passes give unrelated orders.
std::uint64_t pass_seed(std::uint64_t seed, std::uint64_t pass) {
  std::uint64_t z = seed + (pass + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class Item> class ShuffleIterator : public ItemIterator<Item> {
 public:
  ShuffleIterator(ItemIteratorPtr<Item> input, Index buffer_size, std::uint64_t seed)
      : input_(std::move(input)), buffer_size_(buffer_size), generator_(seed) {}

  std::optional<Item> next() override {
    if (!filled_) {
      filled_ = true;
      buffer_.reserve(static_cast<std::size_t>(std::min<Index>(buffer_size_, 1 << 20)));
      while (static_cast<Index>(buffer_.size()) < buffer_size_ && pull()) {}
    }
    if (buffer_.empty()) return std::nullopt;
    const std::size_t chosen = generator_.next_u64() % buffer_.size();
    Item out = std::move(buffer_[chosen]);
    pull();  // the refill lands at the back; the back moves into the emptied slot
    if (chosen + 1 != buffer_.size()) buffer_[chosen] = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

 private:
  // Appends the next input item to the buffer; false at the end of the input.
  bool pull() {
    if (input_done_) return false;
    std::optional<Item> item = input_->next();
    if (!item) {
      input_done_ = true;
      return false;
    }
    buffer_.push_back(std::move(*item));
    return true;
  }

  ItemIteratorPtr<Item> input_;
  Index buffer_size_;
  Generator generator_;
  std::vector<Item> buffer_;
  bool filled_ = false;
  bool input_done_ = false;
};

class ShuffleNode : public detail::ReorderingNode<ShuffleNode> {
 public:
  ShuffleNode(NodePtr input, Index buffer_size, std::uint64_t seed, bool reshuffle)
      : ReorderingNode(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  Index cardinality() const override { return input_->cardinality(); }
  void pass_counts(std::vector<std::uint64_t>& counts) const override {
    input_->pass_counts(counts);
    counts.push_back(passes_.load());
  }
  void set_pass_counts(const std::vector<std::uint64_t>& counts, std::size_t& at) const override {
    input_->set_pass_counts(counts, at);
    if (at >= counts.size()) throw std::invalid_argument("set_pass_counts: too few counts for this dataset");
    passes_.store(counts[at++]);
  }
  template <class Item> ItemIteratorPtr<Item> make_items() const {
    const std::uint64_t pass = reshuffle_ ? passes_.fetch_add(1) : 0;
    return std::make_unique<ShuffleIterator<Item>>(make_input_iterator<Item>(), buffer_size_, pass_seed(seed_, pass));
  }

 private:
  Index buffer_size_;
  std::uint64_t seed_;
  bool reshuffle_;
  mutable std::atomic<std::uint64_t> passes_{0};
};

// ---- take, skip, repeat --------------------------------------------------------------------------------------

template <class Item> class TakeIterator : public ItemIterator<Item> {
 public:
  TakeIterator(ItemIteratorPtr<Item> input, Index n) : input_(std::move(input)), left_(n) {}
  std::optional<Item> next() override {
    if (left_ == 0) return std::nullopt;
    std::optional<Item> item = input_->next();
    if (!item) {
      left_ = 0;
      return std::nullopt;
    }
    if (left_ > 0) --left_;
    return item;
  }

 private:
  ItemIteratorPtr<Item> input_;
  Index left_;  // -1: unlimited
};

class TakeNode : public detail::ReorderingNode<TakeNode> {
 public:
  TakeNode(NodePtr input, Index n) : ReorderingNode(std::move(input)), n_(n) {}
  Index cardinality() const override {
    const Index in = input_->cardinality();
    if (n_ < 0) return in;
    if (in == INFINITE_CARDINALITY) return n_;
    if (in == UNKNOWN_CARDINALITY) return in;
    return std::min(in, n_);
  }
  template <class Item> ItemIteratorPtr<Item> make_items() const {
    return std::make_unique<TakeIterator<Item>>(make_input_iterator<Item>(), n_);
  }

 private:
  Index n_;
};

template <class Item> class SkipIterator : public ItemIterator<Item> {
 public:
  SkipIterator(ItemIteratorPtr<Item> input, Index n) : input_(std::move(input)), to_skip_(n) {}
  std::optional<Item> next() override {
    while (to_skip_ != 0) {
      if (!input_->next()) {
        to_skip_ = 0;
        done_ = true;
      } else if (to_skip_ > 0) {
        --to_skip_;
      }
    }
    if (done_) return std::nullopt;
    std::optional<Item> item = input_->next();
    done_ = !item.has_value();
    return item;
  }

 private:
  ItemIteratorPtr<Item> input_;
  Index to_skip_;  // -1: everything
  bool done_ = false;
};

class SkipNode : public detail::ReorderingNode<SkipNode> {
 public:
  SkipNode(NodePtr input, Index n) : ReorderingNode(std::move(input)), n_(n) {}
  Index cardinality() const override {
    const Index in = input_->cardinality();
    if (in == INFINITE_CARDINALITY || in == UNKNOWN_CARDINALITY) return in;
    if (n_ < 0) return 0;
    return std::max<Index>(0, in - n_);
  }
  template <class Item> ItemIteratorPtr<Item> make_items() const {
    return std::make_unique<SkipIterator<Item>>(make_input_iterator<Item>(), n_);
  }

 private:
  Index n_;
};

template <class Item> class RepeatIterator : public ItemIterator<Item> {
 public:
  using Factory = std::function<ItemIteratorPtr<Item>()>;
  RepeatIterator(Factory make_input, int count) : make_input_(std::move(make_input)), count_(count) {}
  std::optional<Item> next() override {
    for (;;) {
      if (!input_) {
        if (count_ >= 0 && passes_ >= count_) return std::nullopt;
        input_ = make_input_();
        pass_yielded_ = false;
      }
      std::optional<Item> item = input_->next();
      if (item) {
        pass_yielded_ = true;
        return item;
      }
      input_.reset();
      ++passes_;
      if (!pass_yielded_) {
        count_ = 0;  // an empty pass would repeat forever
        return std::nullopt;
      }
    }
  }

 private:
  Factory make_input_;
  int count_;  // -1: forever
  int passes_ = 0;
  bool pass_yielded_ = false;
  ItemIteratorPtr<Item> input_;
};

class RepeatNode : public detail::ReorderingNode<RepeatNode> {
 public:
  RepeatNode(NodePtr input, int count) : ReorderingNode(std::move(input)), count_(count) {}
  Index cardinality() const override {
    const Index in = input_->cardinality();
    if (count_ == 0 || in == 0) return 0;
    if (count_ < 0) return INFINITE_CARDINALITY;
    if (in < 0) return in;
    return in * count_;
  }
  template <class Item> ItemIteratorPtr<Item> make_items() const {
    // The iterator outlives any Dataset handle, so it keeps this node alive.
    auto self = std::static_pointer_cast<const RepeatNode>(shared_from_this());
    return std::make_unique<RepeatIterator<Item>>([self] { return self->template make_input_iterator<Item>(); },
                                                  count_);
  }

 private:
  int count_;
};

// ---- cache ---------------------------------------------------------------------------------------------------

template <class Item> struct CacheState {
  std::mutex mutex;
  std::shared_ptr<const std::vector<Item>> items;  // set by the first complete pass
};

template <class Item> class CacheReadIterator : public ItemIterator<Item> {
 public:
  explicit CacheReadIterator(std::shared_ptr<const std::vector<Item>> items) : items_(std::move(items)) {}
  std::optional<Item> next() override {
    if (position_ >= items_->size()) return std::nullopt;
    return (*items_)[position_++];
  }

 private:
  std::shared_ptr<const std::vector<Item>> items_;
  std::size_t position_ = 0;
};

template <class Item> class CacheFillIterator : public ItemIterator<Item> {
 public:
  CacheFillIterator(ItemIteratorPtr<Item> input, std::shared_ptr<CacheState<Item>> state)
      : input_(std::move(input)), state_(std::move(state)) {}
  std::optional<Item> next() override {
    if (published_) return std::nullopt;
    std::optional<Item> item = input_->next();
    if (item) {
      items_.push_back(*item);
      return item;
    }
    published_ = true;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->items) state_->items = std::make_shared<const std::vector<Item>>(std::move(items_));
    return std::nullopt;
  }

 private:
  ItemIteratorPtr<Item> input_;
  std::shared_ptr<CacheState<Item>> state_;
  std::vector<Item> items_;
  bool published_ = false;
};

class CacheNode : public detail::ReorderingNode<CacheNode> {
 public:
  explicit CacheNode(NodePtr input) : ReorderingNode(std::move(input)) {}
  Index cardinality() const override { return input_->cardinality(); }
  template <class Item> ItemIteratorPtr<Item> make_items() const {
    const std::shared_ptr<CacheState<Item>>& state = state_for<Item>();
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->items) return std::make_unique<CacheReadIterator<Item>>(state->items);
    }
    return std::make_unique<CacheFillIterator<Item>>(make_input_iterator<Item>(), state);
  }

 private:
  template <class Item> const std::shared_ptr<CacheState<Item>>& state_for() const {
    if constexpr (std::is_same_v<Item, Index>) {
      return rows_state_;
    } else {
      return elements_state_;
    }
  }
  std::shared_ptr<CacheState<Index>> rows_state_ = std::make_shared<CacheState<Index>>();
  std::shared_ptr<CacheState<Element>> elements_state_ = std::make_shared<CacheState<Element>>();
};

// ---- batch ---------------------------------------------------------------------------------------------------

// Rows of `source` copied into one new tensor, one memcpy per run of consecutive rows.
Tensor gather_rows(const Tensor& source, const std::vector<Index>& rows) {
  Shape shape = source.shape();
  shape[0] = static_cast<Index>(rows.size());
  Tensor out(shape, source.dtype());
  const std::size_t bytes = row_bytes(source);
  const char* src = static_cast<const char*>(source.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    std::memcpy(dst + i * bytes, src + static_cast<std::size_t>(rows[i]) * bytes, (j - i) * bytes);
    i = j;
  }
  return out;
}

class BatchRowsIterator : public Iterator {
 public:
  BatchRowsIterator(std::vector<Tensor> sources, std::unique_ptr<RowIterator> input, Index batch_size,
                    bool drop_remainder)
      : sources_(std::move(sources)), input_(std::move(input)), batch_size_(batch_size),
        drop_remainder_(drop_remainder) {
    rows_.reserve(static_cast<std::size_t>(std::min<Index>(batch_size, 1 << 20)));
  }
  std::optional<Element> next() override {
    rows_.clear();
    while (static_cast<Index>(rows_.size()) < batch_size_) {
      const std::optional<Index> row = input_->next();
      if (!row) break;
      rows_.push_back(*row);
    }
    if (rows_.empty() || (drop_remainder_ && static_cast<Index>(rows_.size()) < batch_size_)) return std::nullopt;
    Element batch;
    batch.reserve(sources_.size());
    for (const Tensor& source : sources_) batch.push_back(gather_rows(source, rows_));
    return batch;
  }

 private:
  std::vector<Tensor> sources_;
  std::unique_ptr<RowIterator> input_;
  Index batch_size_;
  bool drop_remainder_;
  std::vector<Index> rows_;
};

std::string describe(const Tensor& t) { return t.shape().to_string() + " " + dtype_name(t.dtype()); }

// Throws unless `element` (input element number `index`) matches `first` (number `first_index`): in shapes and
// dtypes, or for a padded batch in ranks and dtypes.
void check_batchable(const Element& element, Index index, const Element& first, Index first_index, bool padded) {
  const std::string where = (padded ? "Dataset.padded_batch: element " : "Dataset.batch: element ") +
                            std::to_string(index);
  if (element.size() != first.size())
    throw std::invalid_argument(where + " has " + std::to_string(element.size()) + " components but element " +
                                std::to_string(first_index) + " has " + std::to_string(first.size()));
  for (std::size_t c = 0; c < element.size(); ++c) {
    const Tensor& t = element[c];
    if (!t.defined()) throw std::invalid_argument(where + " has an undefined tensor as component " + std::to_string(c));
    if (!t.device().is_cpu())
      throw std::invalid_argument(where + " has component " + std::to_string(c) + " on " + t.device().to_string() +
                                  "; pipelines batch host tensors only");
    const bool same_shape = padded ? t.rank() == first[c].rank() : t.shape() == first[c].shape();
    if (!same_shape || t.dtype() != first[c].dtype())
      throw std::invalid_argument(where + " has component " + std::to_string(c) + " of shape " + describe(t) +
                                  " but element " + std::to_string(first_index) + " (the first of its batch) has " +
                                  describe(first[c]) +
                                  (padded ? "; the components of a padded batch must agree in rank and dtype"
                                          : "; the elements of a batch must have equal shapes"));
  }
}

Tensor stack_component(const std::vector<Element>& elements, std::size_t c) {
  const Tensor& first = elements[0][c];
  std::vector<Index> dims{static_cast<Index>(elements.size())};
  dims.insert(dims.end(), first.shape().begin(), first.shape().end());
  Tensor out{Shape(std::move(dims)), first.dtype()};
  const std::size_t bytes = first.nbytes();
  char* dst = static_cast<char*>(out.raw_data());
  for (std::size_t i = 0; i < elements.size(); ++i) std::memcpy(dst + i * bytes, elements[i][c].raw_data(), bytes);
  return out;
}

}  // namespace

Element detail::batch_elements(const std::vector<Element>& elements, const std::vector<Index>& numbers,
                               const Padding* padding) {
  for (std::size_t i = 0; i < elements.size(); ++i)
    check_batchable(elements[i], numbers[i], elements[0], numbers[0], padding != nullptr);
  if (padding) return pad_and_stack(elements, numbers, *padding);
  Element batch;
  batch.reserve(elements[0].size());
  for (std::size_t c = 0; c < elements[0].size(); ++c) batch.push_back(stack_component(elements, c));
  return batch;
}

namespace {

class BatchIterator : public Iterator {
 public:
  BatchIterator(std::unique_ptr<Iterator> input, Index batch_size, bool drop_remainder,
                std::optional<detail::Padding> padding)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder),
        padding_(std::move(padding)) {}
  std::optional<Element> next() override {
    std::vector<Element> elements;
    std::vector<Index> numbers;
    while (static_cast<Index>(elements.size()) < batch_size_) {
      std::optional<Element> element = input_->next();
      if (!element) break;
      elements.push_back(std::move(*element));
      numbers.push_back(seen_++);
    }
    if (elements.empty() || (drop_remainder_ && static_cast<Index>(elements.size()) < batch_size_))
      return std::nullopt;
    return detail::batch_elements(elements, numbers, padding_ ? &*padding_ : nullptr);
  }

 private:
  std::unique_ptr<Iterator> input_;
  Index batch_size_;
  bool drop_remainder_;
  std::optional<detail::Padding> padding_;
  Index seen_ = 0;
};

// batch(), or padded_batch() when given a Padding.
class BatchNode : public DatasetNode {
 public:
  BatchNode(NodePtr input, Index batch_size, bool drop_remainder, std::optional<detail::Padding> padding = {})
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder),
        padding_(std::move(padding)) {}
  const DatasetNode* input() const override { return input_.get(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    const auto* sources = input_->rows();
    if (sources && !padding_)
      return std::make_unique<BatchRowsIterator>(*sources, input_->make_row_iterator(), batch_size_,
                                                 drop_remainder_);
    return std::make_unique<BatchIterator>(input_->make_iterator(), batch_size_, drop_remainder_, padding_);
  }
  Index cardinality() const override {
    const Index in = input_->cardinality();
    if (in < 0) return in;
    return drop_remainder_ ? in / batch_size_ : (in + batch_size_ - 1) / batch_size_;
  }

 private:
  NodePtr input_;
  Index batch_size_;
  bool drop_remainder_;
  std::optional<detail::Padding> padding_;
};

// ---- prefetch ------------------------------------------------------------------------------------------------

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int buffer_size) : input_(std::move(input)), buffer_size_(buffer_size) {}
  const DatasetNode* input() const override { return input_.get(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<detail::PrefetchIterator>(input_->make_iterator(), buffer_size_);
  }
  Index cardinality() const override { return input_->cardinality(); }

 private:
  NodePtr input_;
  int buffer_size_;
};

}  // namespace

// ---- Dataset -------------------------------------------------------------------------------------------------

Dataset Dataset::from_tensor_slices(std::vector<Tensor> components) {
  if (components.empty()) throw std::invalid_argument("Dataset.from_tensor_slices: no components given");
  std::string shapes;
  for (const Tensor& t : components) shapes += (shapes.empty() ? "" : ", ") + (t.defined() ? describe(t) : "undefined");
  for (std::size_t c = 0; c < components.size(); ++c) {
    const Tensor& t = components[c];
    const std::string what = "Dataset.from_tensor_slices: component " + std::to_string(c);
    if (!t.defined()) throw std::invalid_argument(what + " is an undefined tensor (components: " + shapes + ")");
    if (t.rank() == 0) throw std::invalid_argument(what + " is a scalar; slicing needs rank >= 1 (components: " + shapes + ")");
    if (!t.device().is_cpu())
      throw std::invalid_argument(what + " is on " + t.device().to_string() + "; pipelines read host tensors");
    if (t.dim(0) != components[0].dim(0))
      throw std::invalid_argument("Dataset.from_tensor_slices: all components must have the same first dimension, got " +
                                  shapes);
  }
  return Dataset(std::make_shared<SlicesNode>(std::move(components)));
}

Dataset Dataset::from_generator(std::function<GeneratorFn()> factory) {
  if (!factory) throw std::invalid_argument("Dataset.from_generator: empty factory function");
  return Dataset(std::make_shared<GeneratorNode>(std::move(factory)));
}

Dataset Dataset::map(MapFn fn, int num_parallel_calls) const {
  if (!fn) throw std::invalid_argument("Dataset.map: empty function");
  if (num_parallel_calls == AUTOTUNE)
    num_parallel_calls = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (num_parallel_calls < 1)
    throw std::invalid_argument("Dataset.map: num_parallel_calls must be >= 1 or AUTOTUNE, got " +
                                std::to_string(num_parallel_calls));
  return Dataset(std::make_shared<MapNode>(node_, std::move(fn), num_parallel_calls));
}

Dataset Dataset::shuffle(Index buffer_size, std::optional<std::uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size < 1)
    throw std::invalid_argument("Dataset.shuffle: buffer_size must be >= 1, got " + std::to_string(buffer_size));
  return Dataset(std::make_shared<ShuffleNode>(node_, buffer_size, seed ? *seed : next_global_seed(),
                                               reshuffle_each_iteration));
}

Dataset Dataset::batch(Index batch_size, bool drop_remainder) const {
  if (batch_size < 1)
    throw std::invalid_argument("Dataset.batch: batch_size must be >= 1, got " + std::to_string(batch_size));
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder));
}

namespace {

void check_padded_shapes(const std::string& where, const std::vector<Shape>& padded_shapes,
                         const std::vector<double>& padding_values) {
  for (const Shape& shape : padded_shapes)
    for (Index d : shape)
      if (d < -1)
        throw std::invalid_argument(where + ": padded shape " + shape.to_string() + " has a dimension " +
                                    std::to_string(d) + "; dimensions are >= 0, or -1 for the longest in the batch");
  if (!padded_shapes.empty() && !padding_values.empty() && padded_shapes.size() != padding_values.size())
    throw std::invalid_argument(where + ": " + std::to_string(padded_shapes.size()) + " padded shapes but " +
                                std::to_string(padding_values.size()) + " padding values");
}

}  // namespace

Dataset Dataset::padded_batch(Index batch_size, std::vector<Shape> padded_shapes, std::vector<double> padding_values,
                              bool drop_remainder) const {
  if (batch_size < 1)
    throw std::invalid_argument("Dataset.padded_batch: batch_size must be >= 1, got " + std::to_string(batch_size));
  check_padded_shapes("Dataset.padded_batch", padded_shapes, padding_values);
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder,
                                             detail::Padding{std::move(padded_shapes), std::move(padding_values)}));
}

Dataset Dataset::bucket_by_sequence_length(ElementLengthFn element_length_func, std::vector<Index> bucket_boundaries,
                                           std::vector<Index> bucket_batch_sizes, std::vector<Shape> padded_shapes,
                                           std::vector<double> padding_values, bool pad_to_bucket_boundary,
                                           bool no_padding, bool drop_remainder) const {
  const std::string where = "Dataset.bucket_by_sequence_length";
  if (!element_length_func) throw std::invalid_argument(where + ": empty element_length_func");
  if (bucket_batch_sizes.size() != bucket_boundaries.size() + 1)
    throw std::invalid_argument(where + ": len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1, got " +
                                std::to_string(bucket_batch_sizes.size()) + " batch sizes for " +
                                std::to_string(bucket_boundaries.size()) + " boundaries");
  if (std::adjacent_find(bucket_boundaries.begin(), bucket_boundaries.end(), std::greater_equal<>()) !=
      bucket_boundaries.end())
    throw std::invalid_argument(where + ": bucket_boundaries must increase, got " +
                                Shape(bucket_boundaries).to_string());
  for (Index size : bucket_batch_sizes)
    if (size < 1)
      throw std::invalid_argument(where + ": bucket_batch_sizes must be >= 1, got " +
                                  Shape(bucket_batch_sizes).to_string());
  if (pad_to_bucket_boundary && !no_padding && bucket_boundaries.empty())
    throw std::invalid_argument(where + ": pad_to_bucket_boundary needs at least one bucket boundary");
  check_padded_shapes(where, padded_shapes, padding_values);
  return Dataset(detail::bucket_by_sequence_length_node(
      node_, {.element_length_func = std::move(element_length_func),
              .boundaries = std::move(bucket_boundaries),
              .batch_sizes = std::move(bucket_batch_sizes),
              .padding = {std::move(padded_shapes), std::move(padding_values)},
              .pad_to_bucket_boundary = pad_to_bucket_boundary,
              .no_padding = no_padding,
              .drop_remainder = drop_remainder}));
}

Dataset Dataset::prefetch(int buffer_size) const {
  if (buffer_size == AUTOTUNE) buffer_size = 2;
  if (buffer_size < 0)
    throw std::invalid_argument("Dataset.prefetch: buffer_size must be >= 0 or AUTOTUNE, got " +
                                std::to_string(buffer_size));
  if (buffer_size == 0) return *this;
  return Dataset(std::make_shared<PrefetchNode>(node_, buffer_size));
}

Dataset Dataset::repeat(int count) const {
  if (count < -1) throw std::invalid_argument("Dataset.repeat: count must be >= -1, got " + std::to_string(count));
  return Dataset(std::make_shared<RepeatNode>(node_, count));
}

Dataset Dataset::take(Index n) const {
  if (n < -1) throw std::invalid_argument("Dataset.take: n must be >= -1, got " + std::to_string(n));
  return Dataset(std::make_shared<TakeNode>(node_, n));
}

Dataset Dataset::skip(Index n) const {
  if (n < -1) throw std::invalid_argument("Dataset.skip: n must be >= -1, got " + std::to_string(n));
  return Dataset(std::make_shared<SkipNode>(node_, n));
}

Dataset Dataset::cache() const { return Dataset(std::make_shared<CacheNode>(node_)); }

Index Dataset::cardinality() const { return node_->cardinality(); }

std::unique_ptr<Iterator> Dataset::make_iterator() const { return node_->make_iterator(); }

std::vector<std::uint64_t> Dataset::pass_counts() const {
  std::vector<std::uint64_t> counts;
  node_->pass_counts(counts);
  return counts;
}

void Dataset::set_pass_counts(const std::vector<std::uint64_t>& counts) const {
  std::size_t at = 0;
  node_->set_pass_counts(counts, at);
  if (at != counts.size())
    throw std::invalid_argument("set_pass_counts: " + std::to_string(counts.size()) + " counts for a dataset with " +
                                std::to_string(at) + " reshuffling stages");
}

Dataset::RangeIterator::RangeIterator(std::shared_ptr<Iterator> it) : it_(std::move(it)) { current_ = it_->next(); }

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  current_ = it_->next();
  return *this;
}

Dataset::RangeIterator Dataset::begin() const { return RangeIterator(make_iterator()); }

}  // namespace tower::data
