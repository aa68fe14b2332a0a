#pragma once
// The tower command line: `tower <command> [FILE] [--set key.path=value]... [--option value]... [--help]`.
// Options take their value as the next argument or after '=' (--out=runs/a); flags (--monitor) take none.
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tower::cli {

// A command line that does not fit the command; main prints it with the command's usage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandLine {
  std::vector<std::string> positional;
  std::vector<std::string> overrides;  // each --set, in order
  std::map<std::string, std::string> options;
  std::set<std::string> flags;  // the flags given
  bool help = false;

  bool flag(const std::string& name) const { return flags.count(name) > 0; }

  std::optional<std::string> option(const std::string& name) const;
  // Throws UsageError naming the option when it is missing.
  std::string required(const std::string& name) const;
};

// Parses the arguments after the command name. `value_options` are the --options the command takes (besides
// --set and --help) and `flag_options` its flags. An unknown option, a missing value, a value given to a flag or
// a repeated option throws UsageError.
CommandLine parse_command_line(const std::vector<std::string>& args, const std::vector<std::string>& value_options,
                               const std::vector<std::string>& flag_options = {});

// The experiment file of a command line: its one positional argument. Throws UsageError otherwise.
std::string experiment_file(const CommandLine& line);

}  // namespace tower::cli
