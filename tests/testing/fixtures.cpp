#include "testing/fixtures.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef TOWER_TEST_DATA_DIR
#error "TOWER_TEST_DATA_DIR must be defined (the absolute path of tests/reference)"
#endif

namespace tower::testing {

namespace {
// The suite runs on the CPU even on a GPU machine, unless TOWER_DEVICE says otherwise; the *_CUDA tests choose
// their GPU themselves.
const bool cpu_unless_told = [] { return setenv("TOWER_DEVICE", "cpu", 0) == 0; }();
}  // namespace

std::filesystem::path reference_dir() { return TOWER_TEST_DATA_DIR; }

Config read_json_fixture(const std::string& relative_path) {
  const std::filesystem::path path = reference_dir() / relative_path;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open fixture " + path.string() + " (made by the scripts in " +
                             reference_dir().string() + ")");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return Config::parse_json(text.str());
  } catch (const std::exception& e) {
    throw std::runtime_error("fixture " + path.string() + ": " + e.what());
  }
}

Tensor fixture_tensor(const Config& c) {
  std::vector<Index> dims;
  for (const Config& d : c.at("shape").as_list()) dims.push_back(static_cast<Index>(d.as_int()));
  const Shape shape(dims);
  const Config::List& data = c.at("data").as_list();
  if (static_cast<Index>(data.size()) != shape.numel())
    throw std::runtime_error("fixture tensor: " + std::to_string(data.size()) + " values for shape " +
                             shape.to_string());
  if (c.contains("dtype") && c.at("dtype").as_string() == "int32") {
    std::vector<std::int32_t> v;
    for (const Config& x : data) v.push_back(static_cast<std::int32_t>(x.as_int()));
    return Tensor::from_vector(v, shape);
  }
  std::vector<float> v;
  for (const Config& x : data) v.push_back(static_cast<float>(x.as_double()));
  return Tensor::from_vector(v, shape);
}

std::vector<std::string> fixture_case_names(const Config& doc) {
  std::vector<std::string> names;
  if (!doc.contains("cases")) return names;
  for (const Config& c : doc.at("cases").as_list()) names.push_back(c.at("name").as_string());
  return names;
}

const Config& fixture_case(const Config& doc, const std::string& name) {
  for (const Config& c : doc.at("cases").as_list())
    if (c.at("name").as_string() == name) return c;
  throw std::runtime_error("no fixture case named " + name);
}

ScopedEnv::ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) ::setenv(name, value->c_str(), 1);
  else ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_, old_->c_str(), 1);
  else ::unsetenv(name_);
}

}  // namespace tower::testing
