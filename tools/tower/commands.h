#pragma once
// The tower commands, one per file: each is a name, a one-line summary, its help text, the options it takes and
// the function that runs it (returning the process's exit status).
#include <string>
#include <vector>

#include "tools/tower/command_line.h"

namespace tower::cli {

struct Command {
  std::string name;
  std::string summary;
  std::string help;
  std::vector<std::string> options;  // --options that take a value
  int (*run)(const CommandLine& line);
  std::vector<std::string> flags = {};  // --options that take none
};

// Exit statuses: 0 success, 1 a failure while running, 2 a bad command line or experiment, 130 interrupted.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

extern const Command train_command;
extern const Command evaluate_command;
extern const Command predict_command;
extern const Command summary_command;
extern const Command check_command;

}  // namespace tower::cli
