#pragma once
// Internals of Dataset. Each transformation is a DatasetNode pointing at its input; iterating creates one
// iterator per node. Pipelines that only reorder or select the rows of from_tensor_slices (shuffle, take, skip,
// repeat, cache) run on row indices instead of elements, so batch() can gather whole batches with memcpy.
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "api/data/dataset.h"

namespace tower::data::detail {

// Yields row indices into a node's rows() tensors.
class RowIterator {
 public:
  virtual ~RowIterator() = default;
  virtual std::optional<Index> next() = 0;
};

// The iterator type that yields Item: Iterator for elements, RowIterator for row indices.
template <class Item> struct IteratorOf;
template <> struct IteratorOf<Element> { using type = Iterator; };
template <> struct IteratorOf<Index> { using type = RowIterator; };
template <class Item> using ItemIterator = typename IteratorOf<Item>::type;
template <class Item> using ItemIteratorPtr = std::unique_ptr<ItemIterator<Item>>;

class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  virtual ~DatasetNode() = default;
  virtual std::unique_ptr<Iterator> make_iterator() const = 0;
  virtual Index cardinality() const = 0;
  // Non-null when every element is a row of these tensors; make_row_iterator() then yields the row indices
  // of the elements make_iterator() yields, in the same order.
  virtual const std::vector<Tensor>* rows() const { return nullptr; }
  virtual std::unique_ptr<RowIterator> make_row_iterator() const;
  // The node this one reads, or null for a source.
  virtual const DatasetNode* input() const { return nullptr; }
  // The pass counters of the reshuffling stages from the source to this node (Dataset::pass_counts); `at` walks
  // `counts` when setting them.
  virtual void pass_counts(std::vector<std::uint64_t>& counts) const {
    if (input()) input()->pass_counts(counts);
  }
  virtual void set_pass_counts(const std::vector<std::uint64_t>& counts, std::size_t& at) const {
    if (input()) input()->set_pass_counts(counts, at);
  }
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// Element {sources[0][row], sources[1][row], ...} as views sharing the sources' memory.
Element slice_element(const std::vector<Tensor>& sources, Index row);

// Turns a row iterator into an element iterator.
class RowsToElements : public Iterator {
 public:
  RowsToElements(std::vector<Tensor> sources, std::unique_ptr<RowIterator> rows)
      : sources_(std::move(sources)), rows_(std::move(rows)) {}
  std::optional<Element> next() override;

 private:
  std::vector<Tensor> sources_;
  std::unique_ptr<RowIterator> rows_;
};

// A node that reorders or selects its input's items without looking at them, so it serves the row path as
// well: Derived provides `template <class Item> ItemIteratorPtr<Item> make_items() const`, which reads its
// input through make_input_iterator<Item>().
template <class Derived> class ReorderingNode : public DatasetNode {
 public:
  explicit ReorderingNode(NodePtr input) : input_(std::move(input)) {}
  const DatasetNode* input() const override { return input_.get(); }
  const std::vector<Tensor>* rows() const override { return input_->rows(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    if (const auto* sources = rows()) return std::make_unique<RowsToElements>(*sources, make_row_iterator());
    return self().template make_items<Element>();
  }
  std::unique_ptr<RowIterator> make_row_iterator() const override {
    return self().template make_items<Index>();
  }

 protected:
  template <class Item> ItemIteratorPtr<Item> make_input_iterator() const {
    if constexpr (std::is_same_v<Item, Index>) {
      return input_->make_row_iterator();
    } else {
      return input_->make_iterator();
    }
  }
  NodePtr input_;

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace tower::data::detail
