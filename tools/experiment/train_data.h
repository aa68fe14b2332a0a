#pragma once
// TrainData: the training split as fit() consumes it, resumable at any batch.
//
//   examples -> shuffle(buffer) -> per-image preprocessing (parallel, order kept) -> batch -> random steps ->
//   prefetch
//
// Each iteration of dataset() is one pass over the examples (an epoch, unless fit.steps_per_epoch cuts passes
// differently). The shuffle order of pass k and the random flips and crops of batch b of pass k depend only on
// the seeds and (k, b), so seek(t) makes the next iteration produce exactly the batches an uninterrupted run
// produces from global batch t on: pass t / batches_per_pass(), from its batch t % batches_per_pass(), then
// the following passes in order.
#include <cstdint>
#include <memory>
#include <vector>

#include "api/data/dataset.h"
#include "tools/experiment/preprocessing.h"

namespace tower::experiment {

struct TrainDataOptions {
  Index shuffle_buffer = 0;  // 0: no shuffle
  Index batch_size = 32;
  int prefetch = 2;          // 0: none
  int parallel_calls = 1;    // for the per-image steps; data::AUTOTUNE: one per hardware thread
  std::vector<PreprocessingStep> steps;
  std::uint64_t augment_seed = 0;  // seeds the random steps
};

class TrainData {
 public:
  // `examples`: unbatched elements {image, label} with a known cardinality. The shuffle's seed is drawn from the
  // global generator here, as Dataset::shuffle does, so a C++ program making the same calls in the same order
  // sees the same order. Throws std::invalid_argument for an empty or unknown-size input.
  TrainData(const data::Dataset& examples, TrainDataOptions options);

  // What fit() iterates; each make_iterator() starts the next pass.
  const data::Dataset& dataset() const { return dataset_; }
  std::int64_t batches_per_pass() const { return batches_per_pass_; }
  Index examples() const { return examples_; }
  // The next iteration starts at global batch `batch` (counting from the first batch of pass 0). Throws
  // std::logic_error when that lies before a pass already started.
  void seek(std::int64_t batch);

 private:
  struct State;
  std::shared_ptr<State> state_;
  data::Dataset dataset_;
  std::int64_t batches_per_pass_ = 0;
  Index examples_ = 0;
};

}  // namespace tower::experiment
