#include "api/core/random.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

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

std::string Generator::state() const {
  std::ostringstream os;
  os << engine_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  std::mt19937_64 engine;
  is >> engine;
  if (is.fail()) throw std::invalid_argument("Generator::set_state: not a generator state");
  engine_ = engine;
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
