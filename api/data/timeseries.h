#pragma once
// keras.utils.timeseries_dataset_from_array: sliding windows over a long sequence as a Dataset, with Keras' arguments
// and defaults. Window i starts at start_index + p_i, p_i = i * sequence_stride, and holds the rows
// data[start_index + p_i + k * sampling_rate] for k < sequence_length; its target is targets[start_index + p_i].
// Windows run while the last row stays before end_index (and while a target exists). Elements are {windows} or
// {windows, targets}, batched by batch_size (0: unbatched, Keras' None).
//
// A character-level language model's (input, next-character target) pairs are the windows of sequence_length + 1
// ids split into their first and last sequence_length ids, as TensorFlow's text-generation tutorial does them:
//
//   auto windows = data::timeseries_dataset_from_array(ids, std::nullopt,
//                                                      {.sequence_length = 101, .sequence_stride = 100});
//   // each batch [B, 101]: inputs = columns [0, 100), targets = columns [1, 101)
//
// shuffle permutes the window starts once (Generator(seed), the seed drawn from next_global_seed() when none is
// given) and then, as Keras, shuffles locally with a buffer of 8 batches; the order is Keras' kind of order, not
// numpy's numbers.
//
// data is [T, ...] on the CPU (float32 or int32); targets, when given, [>= windows, ...]. Throws
// std::invalid_argument with Keras' checks (start_index in [0, T), end_index in (start_index, T), sampling_rate and
// sequence_stride in [1, T), sequence_length >= 1, batch_size >= 0).
#include <cstdint>
#include <optional>

#include "api/data/dataset.h"

namespace tower::data {

struct TimeseriesOptions {
  Index sequence_length = 0;
  Index sequence_stride = 1;
  Index sampling_rate = 1;
  Index batch_size = 128;  // 0: unbatched
  bool shuffle = false;
  std::optional<std::uint64_t> seed;
  std::optional<Index> start_index;
  std::optional<Index> end_index;
};

Dataset timeseries_dataset_from_array(const Tensor& data, const std::optional<Tensor>& targets,
                                      const TimeseriesOptions& options);

}  // namespace tower::data
