// neardup: find near-duplicate texts. Dispatches to one small file per subcommand.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "cli/common.h"

int main(int argc, char** argv) {
  CLI::App app{"neardup: find near-duplicate texts with 64-bit SimHash fingerprints.\n"
               "Run 'neardup COMMAND --help' for the options and an example of each command."};
  app.name("neardup");
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_code = neardup::cli::kExitSuccess;
neardup::cli::AddHashCommand(&app, &exit_code);
  neardup::cli::AddCompareCommand(&app, &exit_code);
  neardup::cli::AddDedupCommand(&app, &exit_code);
  neardup::cli::AddSegmentCommand(&app, &exit_code);
  neardup::cli::AddKeywordsCommand(&app, &exit_code);
  neardup::cli::AddIdfCommand(&app, &exit_code);
  neardup::cli::AddIndexCommand(&app, &exit_code);
  neardup::cli::AddPlanCommand(&app, &exit_code);
  neardup::cli::AddVersionCommand(&app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? neardup::cli::kExitSuccess : neardup::cli::kExitUsage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "neardup: out of memory (lower the input size limits, e.g. --max-doc-bytes)\n");
    return neardup::cli::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "neardup: %s\n", e.what());
    return neardup::cli::kExitBadInput;
  }
  return exit_code;
}
