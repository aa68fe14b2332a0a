#include "tools/experiment/run_directory.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

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
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(weights) / "checkpoints", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("epoch-", 0) == 0 && entry.path().extension() == ".weights" && entry.path().string() > latest)
      latest = entry.path().string();
  }
  if (latest.empty())
    throw std::runtime_error("the run directory " + weights + " holds no final.weights and no checkpoints/epoch-*.weights");
  return latest;
}

}  // namespace tower::experiment
