// tower: runs YAML experiments (docs/experiments.md).
//   tower train FILE [--set key.path=value ...] [--out RUN_DIR] [--resume RUN_DIR] [--monitor]
//   tower evaluate FILE --weights W        tower predict FILE --weights W --input PATH
//   tower summary FILE                     tower check FILE
#include <iostream>
#include <string>
#include <vector>

#include "tools/experiment/document.h"
#include "tools/tower/commands.h"

namespace {

using tower::cli::Command;

const std::vector<const Command*>& all_commands() {
  static const std::vector<const Command*> c = {&tower::cli::train_command, &tower::cli::evaluate_command,
                                                &tower::cli::predict_command, &tower::cli::summary_command,
                                                &tower::cli::check_command};
  return c;
}

void print_help(std::ostream& os) {
  os << "usage: tower <command> FILE [options]\n\n"
        "Runs a YAML experiment (see docs/experiments.md).\n\ncommands:\n";
  for (const Command* c : all_commands())
    os << "  " << c->name << std::string(10 - c->name.size(), ' ') << c->summary << "\n";
  os << "\nEvery command takes --set key.path=value (repeatable) to override a value of FILE, e.g.\n"
        "--set fit.epochs=1 --set data.train.take=512. 'tower <command> --help' describes a command.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_help(args.empty() ? std::cerr : std::cout);
    return args.empty() ? tower::cli::kExitUsage : 0;
  }
  const Command* command = nullptr;
  for (const Command* c : all_commands())
    if (c->name == args[0]) command = c;
  if (!command) {
    std::cerr << "tower: unknown command '" << args[0] << "'\n\n";
    print_help(std::cerr);
    return tower::cli::kExitUsage;
  }
  try {
    const tower::cli::CommandLine line =
        tower::cli::parse_command_line({args.begin() + 1, args.end()}, command->options, command->flags);
    if (line.help) {
      std::cout << command->help;
      return 0;
    }
    return command->run(line);
  } catch (const tower::cli::UsageError& e) {
    std::cerr << "tower " << command->name << ": " << e.what() << "\n\n" << command->help;
    return tower::cli::kExitUsage;
  } catch (const tower::experiment::ExperimentError& e) {
    std::cerr << e.what() << "\n";
    return tower::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "tower " << command->name << ": error: " << e.what() << "\n";
    return tower::cli::kExitFailure;
  }
}
