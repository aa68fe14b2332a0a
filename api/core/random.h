#pragma once
// Seeded random numbers. The same seed gives the same numbers on every platform: the engine is
// std::mt19937_64 (fully specified by the standard) and the distributions are Tower's own.
#include <cstdint>
#include <mutex>
#include <random>
#include <string>

namespace tower {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : engine_(seed) {}
  void seed(std::uint64_t seed) { engine_.seed(seed); }
  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1) with 24 random bits, exact in float32.
  float uniform() { return static_cast<float>(engine_() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float low, float high) { return low + (high - low) * uniform(); }
  float normal(float mean = 0.f, float stddev = 1.f);
  // Normal redrawn until within two standard deviations of the mean (Keras' TruncatedNormal).
  float truncated_normal(float mean = 0.f, float stddev = 1.f);
  // The engine's full state as text, and its restoration, so a checkpoint can resume the same sequence.
  // set_state throws std::invalid_argument for text that state() did not produce.
  std::string state() const;
  void set_state(const std::string& state);

 private:
  std::mt19937_64 engine_;
};

// Seeds the global generator used where no explicit seed is given (weight initializers, Dropout, shuffles),
// like keras.utils.set_random_seed.
void set_random_seed(std::uint64_t seed);
// Draws a fresh seed from the global generator; thread-safe.
std::uint64_t next_global_seed();

}  // namespace tower
