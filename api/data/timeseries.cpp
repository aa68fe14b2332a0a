#include "api/data/timeseries.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>

#include "api/core/random.h"

namespace tower::data {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("timeseries_dataset_from_array: " + what);
}

void check_arguments(const Tensor& data, const std::optional<Tensor>& targets, const TimeseriesOptions& o) {
  check(data.defined() && data.rank() >= 1, "data must be a tensor of rank >= 1");
  check(data.device() == Device::cpu(), "data must be on the CPU");
  const Index n = data.dim(0);
  const std::string length = " for data of length " + std::to_string(n);
  const Index start = o.start_index.value_or(0);
  check(start >= 0 && (start == 0 || start < n),
        "start_index must be 0 or greater and lower than the length of the data, got " + std::to_string(start) +
            length);
  if (o.end_index) {
    const Index end = *o.end_index;
    check(end > start && end < n && end > 0, "end_index must be higher than start_index (" + std::to_string(start) +
                                                 ") and lower than the length of the data, got " +
                                                 std::to_string(end) + length);
  }
  check(o.sampling_rate > 0 && o.sampling_rate < n,
        "sampling_rate must be in [1, length), got " + std::to_string(o.sampling_rate) + length);
  check(o.sequence_stride > 0 && o.sequence_stride < n,
        "sequence_stride must be in [1, length), got " + std::to_string(o.sequence_stride) + length);
  check(o.sequence_length > 0, "sequence_length must be >= 1, got " + std::to_string(o.sequence_length));
  check(o.batch_size >= 0, "batch_size must be >= 0 (0: unbatched), got " + std::to_string(o.batch_size));
  if (targets) {
    check(targets->defined() && targets->rank() >= 1 && targets->device() == Device::cpu(),
          "targets must be a CPU tensor of rank >= 1");
  }
}

// Rows `first + k * step` for k < count of a [T, ...] tensor, as a new [count, ...] tensor (count 0: one row, no
// leading axis, for a target).
Tensor gather_rows(const Tensor& source, Index first, Index step, Index count) {
  const std::size_t row_bytes = source.nbytes() / static_cast<std::size_t>(source.dim(0));
  std::vector<Index> dims(source.shape().dims().begin(), source.shape().dims().end());
  if (count == 0) dims.erase(dims.begin());
  else dims[0] = count;
  Tensor out(Shape(dims), source.dtype());
  const auto* in = static_cast<const unsigned char*>(source.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  for (Index k = 0; k < std::max<Index>(count, 1); ++k)
    std::memcpy(dst + k * row_bytes, in + (first + k * step) * row_bytes, row_bytes);
  return out;
}

}  // namespace

Dataset timeseries_dataset_from_array(const Tensor& data, const std::optional<Tensor>& targets,
                                      const TimeseriesOptions& options) {
  check_arguments(data, targets, options);
  const Index start = options.start_index.value_or(0);
  const Index end = options.end_index.value_or(data.dim(0));
  Index windows = end - start - (options.sequence_length - 1) * options.sampling_rate;
  if (targets) windows = std::min(windows, targets->dim(0) - start);
  auto positions = std::make_shared<std::vector<Index>>();
  for (Index p = 0; p < windows; p += options.sequence_stride) positions->push_back(p);
  const std::uint64_t seed = options.seed.value_or(options.shuffle ? next_global_seed() : 0);
  if (options.shuffle) {
    Generator generator(seed);
    for (std::size_t i = positions->size(); i > 1; --i)
      std::swap((*positions)[i - 1], (*positions)[generator.next_u64() % i]);
  }
  Dataset dataset = Dataset::from_generator([=]() -> Dataset::GeneratorFn {
    auto next = std::make_shared<std::size_t>(0);
    return [=]() -> std::optional<Element> {
      if (*next >= positions->size()) return std::nullopt;
      const Index first = start + (*positions)[(*next)++];
      Element element{gather_rows(data, first, options.sampling_rate, options.sequence_length)};
      if (targets) element.push_back(gather_rows(*targets, first, 1, 0));
      return element;
    };
  });
  if (options.shuffle) dataset = dataset.shuffle(options.batch_size > 0 ? options.batch_size * 8 : 1024, seed);
  return options.batch_size > 0 ? dataset.batch(options.batch_size) : dataset;
}

}  // namespace tower::data
