#include <cstdio>

#include "cli/commands.h"
#include "neardup/cpu.h"

namespace neardup::cli {

void AddVersionCommand(CLI::App* app, int* exit_code) {
  CLI::App* command = app->add_subcommand("version", "Print the version and the SIMD level in use");
  command->callback([exit_code] {
    std::printf("neardup %s\nsimd: %s (detected: %s)\n", NEARDUP_VERSION,
                std::string(SimdLevelName(ActiveSimdLevel())).c_str(),
                std::string(SimdLevelName(DetectedSimdLevel())).c_str());
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
