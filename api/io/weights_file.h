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

// Writes `bytes` to `path` atomically: to "<path>.tmp-<pid>" in the same directory, fsync, rename over `path`,
// fsync of the directory. A failed write (a full disk: "No space left on device"; a file size limit: "File too
// large") throws std::runtime_error naming `path` and the system error, removes the temporary file and leaves
// `path` as it was. A process killed part-way leaves `path` as it was and at most a stale temporary file.
//
// Test hook: when the environment variable TOWER_TEST_STOP_IN_WRITE is "*" or a suffix of `path`, the process
// writes half of the bytes to the temporary file and stops itself with SIGSTOP (its parent may then kill it:
// a crash during a checkpoint write, made deterministic), continuing the write when sent SIGCONT.
void write_file_atomically(const std::string& path, const std::string& bytes);
// Removes from `dir` the temporary files that killed writers left ("<name>.tmp-<pid>" of a process that is gone
// on this machine); files of live processes and other files stay. A missing `dir` is nothing to do.
void remove_stale_temporaries(const std::string& dir);
// The name of the first float32 tensor holding a NaN or an infinity; empty when every value is finite.
// Checkpoints use it to refuse saving the weights of a diverged run over a good file.
std::string first_non_finite(const std::vector<NamedTensor>& tensors);
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0);

}  // namespace tower::io
