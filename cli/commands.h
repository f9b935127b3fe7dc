// The subcommands of the neardup program. Each Add*Command registers its subcommand on the app;
// when the subcommand runs, its exit code is stored in *exit_code.
#ifndef NEARDUP_CLI_COMMANDS_H_
#define NEARDUP_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace neardup::cli {

void AddHashCommand(CLI::App* app, int* exit_code);
void AddCompareCommand(CLI::App* app, int* exit_code);
void AddVersionCommand(CLI::App* app, int* exit_code);
void AddDedupCommand(CLI::App* app, int* exit_code);
void AddSegmentCommand(CLI::App* app, int* exit_code);
void AddKeywordsCommand(CLI::App* app, int* exit_code);
void AddIdfCommand(CLI::App* app, int* exit_code);
void AddIndexCommand(CLI::App* app, int* exit_code);
void AddPlanCommand(CLI::App* app, int* exit_code);
void AddServeCommand(CLI::App* app, int* exit_code);

}  // namespace neardup::cli

#endif  // NEARDUP_CLI_COMMANDS_H_
