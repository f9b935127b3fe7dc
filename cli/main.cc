// neardup: find near-duplicate texts. Dispatches to one small file per subcommand.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "cli/common.h"

int Run(int argc, char** argv);

namespace {

// SIGINT, SIGTERM, SIGHUP: the temporary files of unfinished outputs are removed and the process
// ends by the same signal (the shell then reports 130, 143, 129). `dedup` handles them itself while
// it runs.
void OnTerminatingSignal(int signal) {
  neardup::RemoveTemporaryOutputs();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void InstallSignalHandlers() {
  // A closed pipe is seen as EPIPE by the output layer, which ends the process quietly
  // (ReportError).
  std::signal(SIGPIPE, SIG_IGN);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, reported like a full disk.
  std::signal(SIGXFSZ, SIG_IGN);
  struct sigaction action = {};
  action.sa_handler = OnTerminatingSignal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

// What went through stdio and iostreams (help texts) must have reached standard output too.
int CloseStandardOutput(int exit_code) {
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout);
  const int error = errno;
  if (!failed) return exit_code;
  if (error == EPIPE) neardup::cli::EndOnClosedPipe();
  std::fprintf(stderr, "neardup: standard output: write failed: %s\n",
               std::strerror(error != 0 ? error : EIO));
  return exit_code == neardup::cli::kExitSuccess ? neardup::cli::kExitBadInput : exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  InstallSignalHandlers();
  return CloseStandardOutput(Run(argc, argv));
}

int Run(int argc, char** argv) {
  CLI::App app{
      "neardup: find near-duplicate texts, by Jaccard sketches (the default) or 64-bit SimHash\n"
      "fingerprints.\n"
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
  neardup::cli::AddServeCommand(&app, &exit_code);
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
    std::fprintf(stderr,
                 "neardup: out of memory (lower the input size limits, e.g. --max-doc-bytes)\n");
    return neardup::cli::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "neardup: %s\n", e.what());
    return neardup::cli::kExitBadInput;
  }
  return exit_code;
}
