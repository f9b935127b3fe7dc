#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/cpu.h"

namespace neardup::cli {

void AddVersionCommand(CLI::App* app, int* exit_code) {
  CLI::App* command = app->add_subcommand("version", "Print the version and the SIMD level in use");
  command->callback([exit_code] {
    Output output;
    output.buffer() += Format("neardup %s\nsimd: %s (detected: %s)\n", NEARDUP_VERSION,
                              std::string(SimdLevelName(ActiveSimdLevel())).c_str(),
                              std::string(SimdLevelName(DetectedSimdLevel())).c_str());
    *exit_code = FinishCommand("version", &output);
  });
}

}  // namespace neardup::cli
