#include "tools/experiment/run_directory.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "api/io/config.h"
#include "api/io/weights_file.h"

namespace tower::experiment {

namespace fs = std::filesystem;

RunDirectory RunDirectory::create(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && !(fs::is_directory(path, ec) && fs::is_empty(path, ec)))
    throw std::runtime_error("the run directory " + path +
                             " already exists and is not empty; continue it with --resume " + path +
                             ", or choose another one with --out");
  fs::create_directories(fs::path(path) / "checkpoints", ec);
  if (ec) throw std::runtime_error("cannot create the run directory " + path + ": " + ec.message());
  return RunDirectory(path);
}

RunDirectory RunDirectory::create_unique(const std::string& base) {
  std::error_code ec;
  const fs::path parent = fs::path(base).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error("cannot create the run directory " + base + ": " + ec.message());
  for (int n = 1;; ++n) {
    const std::string path = n == 1 ? base : base + "-" + std::to_string(n);
    // mkdir fails when the directory exists, so of two runs racing for one name exactly one gets it.
    if (::mkdir(path.c_str(), 0777) == 0) {
      fs::create_directories(fs::path(path) / "checkpoints", ec);
      if (ec) throw std::runtime_error("cannot create the run directory " + path + ": " + ec.message());
      return RunDirectory(path);
    }
    if (errno != EEXIST) throw std::runtime_error("cannot create the run directory " + path + ": " + std::strerror(errno));
  }
}

RunDirectory RunDirectory::open(const std::string& path) {
  RunDirectory dir(path);
  if (fs::is_regular_file(path))
    throw std::runtime_error(path + " is a file, not a run directory: --resume takes the directory an interrupted "
                             "run wrote (runs/<name>-<time>, printed when it started); to start a new run, use "
                             "tower train " + path);
  if (!fs::is_directory(path)) throw std::runtime_error("no run directory " + path);
  if (!fs::exists(dir.config_path()))
    throw std::runtime_error(path + " is not a run directory: it has no config.yaml");
  if (!fs::exists(dir.state_path()))
    throw std::runtime_error("the run directory " + path + " has no checkpoint to resume from (" + dir.state_path() +
                             "): it stopped before its first checkpoint; delete it and train again with --out " +
                             path);
  return dir;
}

void RunDirectory::remove_stale_temporaries() const {
  io::remove_stale_temporaries(path_);
  io::remove_stale_temporaries((fs::path(path_) / "checkpoints").string());
}

std::string RunDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

std::string RunDirectory::epoch_weights_path(int epoch) const {
  char name[48];
  std::snprintf(name, sizeof name, "checkpoints/epoch-%03d.weights", epoch + 1);
  return file(name);
}

void RunDirectory::write(const std::string& name, const std::string& content) const {
  io::write_file_atomically(file(name), content);
}

std::string resolve_weights(const std::string& weights) {
  if (fs::is_regular_file(weights)) return weights;
  if (!fs::is_directory(weights)) throw std::runtime_error("no weights file or run directory " + weights);
  if (fs::exists(fs::path(weights) / "final.weights")) return (fs::path(weights) / "final.weights").string();
  std::string latest;
  long latest_epoch = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(weights) / "checkpoints", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("epoch-", 0) != 0 || entry.path().extension() != ".weights") continue;
    // By number: epoch-1000 is later than epoch-999, which sorts after it as text.
    const std::string digits = name.substr(6, name.size() - 6 - 8);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long epoch = std::stol(digits);
    if (epoch > latest_epoch) {
      latest_epoch = epoch;
      latest = entry.path().string();
    }
  }
  if (latest.empty())
    throw std::runtime_error("the run directory " + weights + " holds no final.weights and no checkpoints/epoch-*.weights");
  return latest;
}

std::vector<std::string> recorded_class_names(const std::string& weights) {
  fs::path run = fs::is_directory(weights) ? fs::path(weights) : fs::path(weights).parent_path();
  if (!fs::exists(RunDirectory::view(run.string()).config_path()) && run.filename() == "checkpoints")
    run = run.parent_path();
  const std::string path = RunDirectory::view(run.string()).class_names_path();
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> names;
  try {
    const Config list = Config::parse_json(text.str());
    for (const Config& name : list.as_list()) names.push_back(name.as_string());
  } catch (const ConfigError& e) {
    throw std::runtime_error(path + ": " + e.what() + " (expected a JSON list of class names)");
  }
  return names;
}

}  // namespace tower::experiment
