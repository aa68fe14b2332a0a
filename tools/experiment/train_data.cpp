#include "tools/experiment/train_data.h"

#include <mutex>
#include <optional>
#include <stdexcept>

namespace tower::experiment {

namespace {

// splitmix64: nearby (seed, pass, batch) triples give unrelated generator seeds.
std::uint64_t mix(std::uint64_t seed, std::uint64_t pass, std::uint64_t batch) {
  std::uint64_t z = seed + (pass + 1) * 0x9E3779B97F4A7C15ull + (batch + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool has_image_steps(const std::vector<PreprocessingStep>& steps) {
  for (const PreprocessingStep& p : steps)
    if (p.type != "random_flip" && p.type != "random_crop") return true;
  return false;
}

}  // namespace

struct TrainData::State : std::enable_shared_from_this<TrainData::State> {
  std::optional<data::Dataset> shuffled;  // before batching: advancing its passes is cheap
  std::optional<data::Dataset> batched;
  std::vector<PreprocessingStep> steps;
  bool random = false;
  std::uint64_t seed = 0;
  std::mutex mutex;
  std::int64_t next_pass = 0, skip = 0;  // where the next iteration starts
  std::int64_t shuffle_passes = 0;       // passes the shuffle has started

  data::Dataset::GeneratorFn start_pass() {
    std::int64_t pass = 0, first = 0;
    std::shared_ptr<data::Iterator> it;
    {
      std::lock_guard<std::mutex> lock(mutex);
      pass = next_pass++;
      first = skip;
      skip = 0;
      // Each shuffle pass draws its own order; step over the passes an earlier run consumed.
      while (shuffle_passes < pass) {
        shuffled->make_iterator();
        ++shuffle_passes;
      }
      it = batched->make_iterator();
      ++shuffle_passes;
    }
    auto batch = std::make_shared<std::int64_t>(0);
    return [self = shared_from_this(), it, batch, pass, first]() -> std::optional<data::Element> {
      for (;;) {
        std::optional<data::Element> e = it->next();
        if (!e) return e;
        const std::int64_t b = (*batch)++;
        if (b < first) continue;
        if (self->random) {
          Generator rng(mix(self->seed, static_cast<std::uint64_t>(pass), static_cast<std::uint64_t>(b)));
          (*e)[0] = apply_random_steps(self->steps, (*e)[0], rng);
        }
        return e;
      }
    };
  }
};

TrainData::TrainData(const data::Dataset& examples, TrainDataOptions options)
    : state_(std::make_shared<State>()),
      dataset_(data::Dataset::from_generator([state = state_] { return state->start_pass(); })) {
  examples_ = examples.cardinality();
  if (examples_ <= 0)
    throw std::invalid_argument("TrainData: the training split has " +
                                std::string(examples_ == 0 ? "no examples" : "an unknown size"));
  if (options.batch_size < 1) throw std::invalid_argument("TrainData: batch_size must be >= 1");
  batches_per_pass_ = (examples_ + options.batch_size - 1) / options.batch_size;
  State& s = *state_;
  s.steps = options.steps;
  s.random = has_random_steps(options.steps);
  s.seed = options.augment_seed;
  s.shuffled = options.shuffle_buffer > 0 ? examples.shuffle(options.shuffle_buffer) : examples;
  data::Dataset mapped = *s.shuffled;
  if (has_image_steps(options.steps)) {
    const std::vector<PreprocessingStep> steps = options.steps;
    mapped = mapped.map(
        [steps](const data::Element& e) {
          data::Element out = e;
          out[0] = apply_image_steps(steps, e[0], true);
          return out;
        },
        options.parallel_calls);
  }
  s.batched = mapped.batch(options.batch_size);
  if (options.prefetch > 0) dataset_ = dataset_.prefetch(options.prefetch);
}

void TrainData::seek(std::int64_t batch) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const std::int64_t pass = batch / batches_per_pass_;
  if (pass < state_->shuffle_passes)
    throw std::logic_error("TrainData::seek: batch " + std::to_string(batch) + " lies in pass " +
                           std::to_string(pass) + ", before the passes already started");
  state_->next_pass = pass;
  state_->skip = batch % batches_per_pass_;
}

}  // namespace tower::experiment
