#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include "tools/experiment/runner.h"
#include "tools/tower/commands.h"

extern char** environ;

namespace tower::cli {

namespace {

namespace fs = std::filesystem;

bool executable(const fs::path& p) { return !p.empty() && fs::is_regular_file(p) && ::access(p.c_str(), X_OK) == 0; }

// The tower-monitor program for --monitor: $TOWER_MONITOR, else the one next to this tower binary (both are
// built into bin/), else the first on PATH. Checked before training, so that a missing monitor or display is
// told at once rather than after the run.
std::string find_monitor() {
  if (const char* given = std::getenv("TOWER_MONITOR"); given && *given) {
    if (!executable(given))
      throw std::runtime_error(std::string("--monitor: TOWER_MONITOR=") + given + " is not an executable file");
    return given;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / "tower-monitor")) return (self.parent_path() / "tower-monitor").string();
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (std::size_t begin = 0; begin <= dirs.size();) {
      std::size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      const fs::path candidate = fs::path(dirs.substr(begin, end - begin)) / "tower-monitor";
      if (end > begin && executable(candidate)) return candidate.string();
      begin = end + 1;
    }
  }
  throw std::runtime_error(
      "--monitor: tower-monitor was not found next to tower nor on PATH (it is built when Qt 6 Charts is "
      "found: install qt6-charts-dev and rebuild, or set TOWER_MONITOR to its path)");
}

bool has_display() {
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
    if (const char* v = std::getenv(name); v && *v) return true;
  return false;
}

// Starts `tower-monitor --no-listen RUN_DIR` in its own session, its output in RUN_DIR/monitor.log. The monitor
// follows the run's events.jsonl and outlives the training run (close its window to end it).
void start_monitor(const std::string& monitor, const std::string& run_directory, std::ostream& log) {
  const std::string log_path = (fs::path(run_directory) / "monitor.log").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
  std::vector<std::string> args = {monitor, "--no-listen", run_directory};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, monitor.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) throw std::runtime_error("--monitor: cannot start " + monitor + ": " + std::strerror(error));
  log << "Monitor: " << monitor << " " << run_directory << " (pid " << pid << ", log " << log_path << ")\n";
}

int run(const CommandLine& line) {
  const std::optional<std::string> resume = line.option("resume");
  if (resume && line.option("out")) throw UsageError("--resume continues its run directory; --out does not apply");
  std::optional<experiment::Experiment> given;
  if (!line.positional.empty() || !resume) given = experiment::Experiment::load(experiment_file(line), line.overrides);
  else if (!line.overrides.empty()) throw UsageError("--set needs the experiment FILE");
  experiment::TrainOptions options;
  options.out = line.option("out").value_or("");
  if (line.flag("monitor")) {
    const std::string monitor = find_monitor();
    if (!has_display())
      throw std::runtime_error(
          "--monitor: no display (DISPLAY and WAYLAND_DISPLAY are not set); run `tower-monitor RUN_DIR` where "
          "there is one, or `tower-monitor --snapshot RUN_DIR out.png` for a picture");
    options.on_run_directory = [monitor](const std::string& dir) { start_monitor(monitor, dir, std::cout); };
  }
  experiment::TrainResult result;
  if (resume) {
    options.resume = *resume;
    result = experiment::train(experiment::resume_experiment(*resume, given ? &*given : nullptr), options);
  } else {
    result = experiment::train(*given, options);
  }
  if (result.chief) std::cout << (result.interrupted ? "Interrupted run: " : "Run: ") << result.run_directory << "\n";
  return result.interrupted ? kExitInterrupted : 0;
}

}  // namespace

const Command train_command{
    "train",
    "train a model as the experiment file says, into a run directory",
    R"(usage: tower train FILE [--set key.path=value ...] [--out RUN_DIR] [--monitor]
       tower train [FILE [--set ...]] --resume RUN_DIR [--monitor]

Trains the experiment in FILE into a run directory: config.yaml (the resolved experiment), summary.txt,
history.csv, events.jsonl (one JSON object per step and per epoch), checkpoints/ (state.weights, the
resumable state, and epoch-NNN.weights), final.weights and metrics.json.

options:
  --set key.path=value  override a value of FILE (repeatable), e.g. --set fit.epochs=1,
                        --set data.train.take=512, --set compile.optimizer.learning_rate=0.01
  --out RUN_DIR         the run directory (default: output.directory, else runs/<name>-<date>-<time>,
                        with -2, -3, ... when taken); it must not exist or be empty
  --resume RUN_DIR      continue an interrupted run from its checkpoint, to the same final weights as an
                        uninterrupted run; FILE and --set may be given to check them against the run's
                        config.yaml (only fit.epochs, fit.verbose and output may differ)
  --monitor             open tower-monitor on the run directory: live charts of the loss, the metrics and
                        examples/sec (needs a display; the monitor is found next to tower, on PATH or in
                        $TOWER_MONITOR, and its output goes to RUN_DIR/monitor.log)

Ctrl-C ends training after the current batch and saves a checkpoint (with fit.steps_per_epoch: after the
current epoch); a second Ctrl-C quits at once. Exit status: 0 done, 130 interrupted, 2 a bad experiment or
command line, 1 another error.
)",
    {"out", "resume"},
    run,
    {"monitor"}};

}  // namespace tower::cli
