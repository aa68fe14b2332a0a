#pragma once
// Backend::dropout_mask: a counter-based stream, so mask[i] depends only on (seed, i) and the CPU and the GPU
// draw the same mask whatever their thread layout.
#include <cstdint>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// Steele, Lea and Flood's SplitMix64 finaliser: a bijection of 64-bit words that mixes every input bit.
TOWER_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// mask[i] = keep_scale when the uniform u(seed, i) in [0, 1) is >= rate, else 0.
struct DropoutMask {
  float* mask;
  float rate, keep_scale;  // keep_scale = 1 / (1 - rate)
  std::uint64_t salt;      // splitmix64(seed)
  TOWER_HD void operator()(Index i) const {
    // The top 24 bits as a uniform in [0, 1); through int32 (exact below 2^24), which vectorises on the CPU.
    const auto bits = static_cast<std::int32_t>(splitmix64(salt ^ static_cast<std::uint64_t>(i)) >> 40);
    const float u = static_cast<float>(bits) * (1.f / 16777216.f);
    mask[i] = u >= rate ? keep_scale : 0.f;
  }
};

TOWER_HD DropoutMask make_dropout_mask(float* mask, float rate, std::uint64_t seed) {
  return {mask, rate, 1.f / (1.f - rate), splitmix64(seed)};
}

// DropoutMask with the seed read from memory when the element is computed (on a GPU, from a buffer rewritten
// before each replay of a captured graph). Mixing the salt per element costs one more splitmix64 and spares a
// kernel that would compute it first.
struct DropoutMaskFromMemory {
  float* mask;
  float rate, keep_scale;
  const std::uint64_t* seed;
  TOWER_HD void operator()(Index i) const { DropoutMask{mask, rate, keep_scale, splitmix64(*seed)}(i); }
};

}  // namespace tower::backend::math
