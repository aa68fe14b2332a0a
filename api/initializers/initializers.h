#pragma once
// Weight initializers with Keras' names, defaults and fan rules. A string converts implicitly, so an
// options field takes either "he_normal" or initializers::RandomNormal({.stddev = 0.01}).
#include <cstdint>
#include <optional>
#include <string>

#include "api/core/tensor.h"
#include "api/io/config.h"
#include "api/io/registry.h"

namespace tower::initializers {

struct Initializer {
  // Keras' snake_case name: glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal,
  // lecun_uniform, zeros, ones, constant, random_normal, random_uniform, truncated_normal, orthogonal.
  std::string name = "glorot_uniform";
  double mean = 0.0, stddev = 0.05;     // random_normal, truncated_normal
  double minval = -0.05, maxval = 0.05;  // random_uniform
  double value = 0.0;                    // constant
  double gain = 1.0;                     // orthogonal
  std::optional<std::uint64_t> seed;     // none: drawn from the global generator (set_random_seed)

  Initializer() = default;
  Initializer(const char* n) : Initializer(std::string(n)) {}
  Initializer(std::string n);  // accepts snake_case or Keras' class names; throws std::invalid_argument

  // Fills `t` (float32, host or device); fans follow Keras' compute_fans on t's shape.
  void operator()(Tensor& t) const;
  // Keras' serialized form: {"class_name": "GlorotUniform", "config": {"seed": null}}.
  Config to_config() const;
  static Initializer from_config(const Config& c);
};

struct RandomOptions {
  double mean = 0.0, stddev = 0.05;
  std::optional<std::uint64_t> seed;
};
struct UniformOptions {
  double minval = -0.05, maxval = 0.05;
  std::optional<std::uint64_t> seed;
};

// The initializer classes by Keras class name, with Keras' snake_case names as aliases (io/registry.h).
Registry<Initializer>& registry();

Initializer Zeros();
Initializer Ones();
Initializer Constant(double value);
Initializer RandomNormal(RandomOptions o = {});
Initializer TruncatedNormal(RandomOptions o = {});
Initializer RandomUniform(UniformOptions o = {});
Initializer GlorotUniform(std::optional<std::uint64_t> seed = {});
Initializer GlorotNormal(std::optional<std::uint64_t> seed = {});
Initializer HeNormal(std::optional<std::uint64_t> seed = {});
Initializer HeUniform(std::optional<std::uint64_t> seed = {});
Initializer LecunNormal(std::optional<std::uint64_t> seed = {});
Initializer LecunUniform(std::optional<std::uint64_t> seed = {});
// Keras' Orthogonal (the default recurrent_initializer): a weight of rank 2 or more seen as [rows, cols] (cols its last
// axis) gets orthonormal columns (rows, when rows < cols), times gain. A weight of rank below 2 throws.
Initializer Orthogonal(double gain = 1.0, std::optional<std::uint64_t> seed = {});

}  // namespace tower::initializers
