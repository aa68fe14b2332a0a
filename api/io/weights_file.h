#pragma once
// Tower's weights file: "TOWERWTS", a format version, a JSON header (model name, and per weight its path,
// shape and byte offset), the float32 data, and a CRC-32 of everything before it. Files are written to a
// temporary name in the same directory, flushed, and renamed over the target, so an interrupted save never
// leaves a damaged file where a good one was.
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "api/io/config.h"

namespace tower::io {

struct NamedTensor {
  std::string name;
  Tensor value;
};

// Writes atomically; throws std::runtime_error naming the path and the system error.
void write_weights_file(const std::string& path, const std::vector<NamedTensor>& weights, const Config& extra = {});

struct WeightsFile {
  std::vector<NamedTensor> weights;
  Config extra;  // what the writer stored beside the weights (a model's config, ...)
};
// Throws std::runtime_error naming the path and the problem: missing, not a Tower weights file, truncated,
// checksum mismatch, malformed header.
WeightsFile read_weights_file(const std::string& path);

// Writes `bytes` to `path` atomically (temporary file in the same directory, fsync, rename).
void write_file_atomically(const std::string& path, const std::string& bytes);
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0);

}  // namespace tower::io
