#pragma once
// Reading the reference fixtures under tests/reference (written by the scripts there with Keras, TensorFlow or
// PyTorch; see each script). Every reader throws std::runtime_error naming the file and the script to run, so a
// missing fixture fails its test with the reason instead of crashing test discovery.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tower/tower.h"

namespace tower::testing {

// tests/reference (TOWER_TEST_DATA_DIR).
std::filesystem::path reference_dir();

// The parsed JSON of reference_dir() / relative_path.
Config read_json_fixture(const std::string& relative_path);

// {"shape": [...], "data": [...], "dtype": "float32" | "int32"} (dtype optional, float32 by default) as a CPU
// tensor; throws when the data's length does not match the shape.
Tensor fixture_tensor(const Config& c);

// The "name" of every entry of doc["cases"]; empty when `doc` has none.
std::vector<std::string> fixture_case_names(const Config& doc);
// The entry of doc["cases"] named `name`; throws when there is none.
const Config& fixture_case(const Config& doc, const std::string& name);

// Sets the environment variable `name` to `value` (unsets it for nullopt) for the object's lifetime, then puts
// back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace tower::testing
