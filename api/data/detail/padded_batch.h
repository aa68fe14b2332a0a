#pragma once
// Internals of Dataset::padded_batch and Dataset::bucket_by_sequence_length.
#include <vector>

#include "api/data/detail/dataset_node.h"

namespace tower::data::detail {

// How padded_batch pads: one shape and one value per component (empty: -1 everywhere, 0). A -1 dimension pads
// to `unknown_size`, or to the batch's longest when that is -1 too.
struct Padding {
  std::vector<Shape> shapes;
  std::vector<double> values;
  Index unknown_size = -1;
};

// The batch of `elements` (input element numbers `numbers`, for errors) after checking that they batch together:
// stacked as batch() stacks them, or padded as padded_batch() pads them when `padding` is non-null. Defined in
// dataset.cpp beside batch().
Element batch_elements(const std::vector<Element>& elements, const std::vector<Index>& numbers,
                       const Padding* padding);

// The padding half of batch_elements, for elements already checked to agree in components, ranks and dtypes.
Element pad_and_stack(const std::vector<Element>& elements, const std::vector<Index>& numbers, const Padding& padding);

struct Buckets {
  Dataset::ElementLengthFn element_length_func;
  std::vector<Index> boundaries;
  std::vector<Index> batch_sizes;
  Padding padding;
  bool pad_to_bucket_boundary = false;
  bool no_padding = false;
  bool drop_remainder = false;
};

NodePtr bucket_by_sequence_length_node(NodePtr input, Buckets buckets);

}  // namespace tower::data::detail
