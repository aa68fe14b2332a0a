#include "api/core/random.h"

#include <cmath>

namespace tower {

float Generator::normal(float mean, float stddev) {
  // Box-Muller on two uniforms; u1 is kept away from 0 so log() stays finite.
  const double u1 = (static_cast<double>(engine_() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
  const double u2 = static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return mean + stddev * static_cast<float>(z);
}

float Generator::truncated_normal(float mean, float stddev) {
  for (;;) {
    const float z = normal();
    if (std::fabs(z) <= 2.f) return mean + stddev * z;
  }
}

namespace {
std::mutex global_mutex;
Generator& global_generator() {
  static Generator g(1337);
  return g;
}
}  // namespace

void set_random_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(global_mutex);
  global_generator().seed(seed);
}

std::uint64_t next_global_seed() {
  std::lock_guard<std::mutex> lock(global_mutex);
  return global_generator().next_u64();
}

}  // namespace tower
