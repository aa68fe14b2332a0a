#include "tools/tower/command_line.h"

#include <algorithm>

#include "api/engine/layer_options.h"

namespace tower::cli {

std::optional<std::string> CommandLine::option(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

std::string CommandLine::required(const std::string& name) const {
  const std::optional<std::string> v = option(name);
  if (!v) throw UsageError("missing --" + name);
  return *v;
}

CommandLine parse_command_line(const std::vector<std::string>& args, const std::vector<std::string>& value_options,
                               const std::vector<std::string>& flag_options) {
  CommandLine out;
  std::vector<std::string> known = value_options;
  known.insert(known.end(), flag_options.begin(), flag_options.end());
  known.push_back("set");
  known.push_back("help");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      out.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (const std::size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (std::find(known.begin(), known.end(), name) == known.end() || name == "help") {
      const std::string near = tower::detail::closest_key(name, known);
      throw UsageError("unknown option --" + name + (near.empty() ? "" : " (did you mean --" + near + "?)"));
    }
    if (std::find(flag_options.begin(), flag_options.end(), name) != flag_options.end()) {
      if (has_value) throw UsageError("--" + name + " takes no value");
      if (!out.flags.insert(name).second) throw UsageError("--" + name + " given twice");
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw UsageError("--" + name + " needs a value");
      value = args[++i];
    }
    if (name == "set") {
      out.overrides.push_back(value);
    } else if (!out.options.emplace(name, value).second) {
      throw UsageError("--" + name + " given twice");
    }
  }
  return out;
}

std::string experiment_file(const CommandLine& line) {
  if (line.positional.empty()) throw UsageError("missing the experiment FILE");
  if (line.positional.size() > 1)
    throw UsageError("one experiment FILE, got " + std::to_string(line.positional.size()) + " arguments (" +
                     line.positional[0] + ", " + line.positional[1] + ", ...)");
  return line.positional[0];
}

}  // namespace tower::cli
