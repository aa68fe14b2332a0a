#pragma once
// Dataset: an input pipeline in the spirit of tf.data. A Dataset is an immutable description of a stream of
// elements (each a std::vector<Tensor> of components, e.g. {image, label}); copying one is cheap, and every
// transformation returns a new Dataset sharing the old one. Iterating runs the pipeline:
//
//   auto ds = Dataset::from_tensor_slices({x, y}).shuffle(10000).batch(128).prefetch(2);
//   for (const Element& batch : ds) { ... batch[0] is [128, 28, 28, 1], batch[1] is [128] ... }
//
// All tensors handled by a pipeline live on the CPU; whoever consumes a batch copies it to its device.
// Elements produced by from_tensor_slices share memory with the sliced tensors; batches are fresh tensors.
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "api/core/tensor.h"

namespace tower::data {

using Element = std::vector<Tensor>;

// Values of cardinality(), as tf.data.INFINITE_CARDINALITY / UNKNOWN_CARDINALITY.
inline constexpr Index INFINITE_CARDINALITY = -1;
inline constexpr Index UNKNOWN_CARDINALITY = -2;
// Lets map() and prefetch() choose the parallelism / buffer size, as tf.data.AUTOTUNE.
inline constexpr int AUTOTUNE = -1;

// One pass over a Dataset. Not thread-safe: one consumer calls next().
class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element, or nullopt at the end. An exception thrown anywhere in the pipeline (a map function,
  // a generator, a prefetch thread) is rethrown here; after it the iterator is exhausted.
  virtual std::optional<Element> next() = 0;
};

namespace detail {
class DatasetNode;
}

class Dataset {
 public:
  using GeneratorFn = std::function<std::optional<Element>()>;
  using MapFn = std::function<Element(const Element&)>;

  // Element i is {components[0][i], components[1][i], ...}. Requires at least one component, all defined, of
  // rank >= 1, on the CPU and with the same first dimension; throws std::invalid_argument naming the shapes.
  static Dataset from_tensor_slices(std::vector<Tensor> components);
  // `factory` is called once per iteration and returns the generator for that pass, which returns elements
  // until it returns nullopt. Cardinality unknown.
  static Dataset from_generator(std::function<GeneratorFn()> factory);

  // Applies fn to every element. num_parallel_calls > 1 (or AUTOTUNE: one per hardware thread) runs fn on
  // that many threads, so fn must then be thread-safe; the output order is always the input order.
  Dataset map(MapFn fn, int num_parallel_calls = 1) const;
  // tf.data's shuffle: keeps a buffer of buffer_size elements and emits a uniformly chosen one, refilling its
  // slot from the input. Without a seed, one is drawn from next_global_seed() here, so set_random_seed()
  // makes runs reproducible. With reshuffle_each_iteration each pass uses a different order (pass k of a run
  // is the same in every run); otherwise every pass repeats the first order. Requires buffer_size >= 1.
  Dataset shuffle(Index buffer_size, std::optional<std::uint64_t> seed = {},
                  bool reshuffle_each_iteration = true) const;
  // Stacks batch_size consecutive elements along a new axis 0. The last batch is shorter unless
  // drop_remainder. Every element must have the same number of components with the same shapes and dtypes;
  // next() throws std::invalid_argument naming the element index and the shapes otherwise.
  // Requires batch_size >= 1.
  Dataset batch(Index batch_size, bool drop_remainder = false) const;
  // tf.data's padded_batch: batch() for elements whose components differ in shape. Component c of the batch is
  // [n] + padded_shapes[c], each element's component copied to the start of its slot (so padded at the end of
  // every dimension) and the rest filled with padding_values[c] in the component's dtype. A dimension of -1 in
  // padded_shapes (every dimension when padded_shapes is empty) takes the longest of the batch. padding_values
  // empty: 0 everywhere. next() throws std::invalid_argument naming the element, component, dimension and sizes
  // when an element is longer than its padded shape, when elements differ in number of components or in a
  // component's rank or dtype, or when padded_shapes / padding_values do not give one entry (of the component's
  // rank; a value its dtype holds) per component. Requires batch_size >= 1 and padded dimensions >= -1.
  Dataset padded_batch(Index batch_size, std::vector<Shape> padded_shapes = {}, std::vector<double> padding_values = {},
                       bool drop_remainder = false) const;
  using ElementLengthFn = std::function<Index(const Element&)>;
  // tf.data's bucket_by_sequence_length: element_length_func(element) puts each element in bucket i, the first
  // with length < bucket_boundaries[i] (the last bucket takes the rest), and a bucket is emitted as one batch,
  // made as padded_batch (batch() with no_padding) makes it, as soon as it holds bucket_batch_sizes[i]
  // elements. At the end of the input the partial buckets follow in bucket order (none with drop_remainder),
  // as tf.data's group_by_window flushes them. With pad_to_bucket_boundary the dimensions padded_shapes leaves
  // at -1 (all, when it is empty) are padded to bucket_boundaries[i] - 1 instead of the batch's longest, and
  // next() throws std::invalid_argument for an element of length >= the last boundary (no_padding overrides
  // pad_to_bucket_boundary, as in tf.data). Requires bucket_batch_sizes.size() == bucket_boundaries.size() + 1,
  // increasing boundaries, batch sizes >= 1; throws std::invalid_argument otherwise. Cardinality unknown, as
  // tf.data's.
  Dataset bucket_by_sequence_length(ElementLengthFn element_length_func, std::vector<Index> bucket_boundaries,
                                    std::vector<Index> bucket_batch_sizes, std::vector<Shape> padded_shapes = {},
                                    std::vector<double> padding_values = {}, bool pad_to_bucket_boundary = false,
                                    bool no_padding = false, bool drop_remainder = false) const;
  // Produces elements on a background thread into a queue of buffer_size (AUTOTUNE: 2; 0: no thread).
  // Destroying the iterator stops and joins the thread, also before the end is reached.
  Dataset prefetch(int buffer_size) const;
  // Repeats the input count times (-1: forever). An input that yields nothing ends the repetition.
  Dataset repeat(int count = -1) const;
  // The first n elements (n = -1: all).
  Dataset take(Index n) const;
  // All but the first n elements (n = -1: none).
  Dataset skip(Index n) const;
  // Keeps the elements of the first complete pass in memory and replays them on later passes. A pass stopped
  // early caches nothing.
  Dataset cache() const;

  // The number of elements if known, INFINITE_CARDINALITY or UNKNOWN_CARDINALITY, with tf.data's rules.
  Index cardinality() const;

  std::unique_ptr<Iterator> make_iterator() const;
  // Where the pipeline's random orders stand: how many passes each reshuffling stage (shuffle with
  // reshuffle_each_iteration), from the source on, has begun. A program resumed from a checkpoint sets them back
  // (BackupAndRestore does) so that its next pass has the order the interrupted run's next pass would have had.
  // set_pass_counts throws std::invalid_argument when the counts are not one per reshuffling stage.
  std::vector<std::uint64_t> pass_counts() const;
  void set_pass_counts(const std::vector<std::uint64_t>& counts) const;

  // Range-for support: each begin() starts a new pass.
  class RangeIterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Element;
    using difference_type = std::ptrdiff_t;
    using pointer = const Element*;
    using reference = const Element&;

    RangeIterator() = default;
    explicit RangeIterator(std::shared_ptr<Iterator> it);
    const Element& operator*() const { return *current_; }
    const Element* operator->() const { return &*current_; }
    RangeIterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    std::shared_ptr<Iterator> it_;
    std::optional<Element> current_;
  };
  RangeIterator begin() const;
  std::default_sentinel_t end() const { return {}; }

 private:
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const detail::DatasetNode> node_;
};

}  // namespace tower::data
