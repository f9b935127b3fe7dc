// neardup plan: which index design the planner would choose for N fingerprints, and why.
#include <cmath>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/index.h"

namespace neardup::cli {
namespace {

struct PlanFlags {
  double n = 0;
  int k = 3;
  uint64_t memory = 0;
};

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", bytes, units[unit]);
  return text;
}

int RunPlan(const PlanFlags& flags) {
  if (!(flags.n >= 1 && flags.n <= 4294967294.0) || std::floor(flags.n) != flags.n) {
    std::fprintf(stderr, "neardup plan: --n must be a whole number from 1 to 2^32 - 2\n");
    return kExitUsage;
  }
  const auto n = static_cast<uint64_t>(flags.n);
  auto plan = PlanDesign(n, flags.k, flags.memory);
  if (!plan.ok()) return ReportError("plan", plan.status());
  Output output;
  std::string& out = output.buffer();
  out += Format("fingerprints: %llu, k: %d, memory budget: %s\n",
                static_cast<unsigned long long>(n), flags.k,
                flags.memory ? HumanBytes(static_cast<double>(flags.memory)).c_str() : "none");
  out += Format("design: %s\n", plan->design.ToString().c_str());
  out += Format("bucket directory: %d bits per table\n", plan->prefix_bits);
  out += Format("expected candidates per query: %.1f\n", plan->candidates_per_query);
  out += Format("bytes per fingerprint: %.1f (total %s)\n", plan->bytes_per_fingerprint,
                HumanBytes(plan->bytes_per_fingerprint * static_cast<double>(n)).c_str());
  out += Format("estimated time per query on one core: %.0f ns\n", plan->cost_per_query_ns);
  out += Format(
      "why: the fastest exact design (pigeonhole: b blocks, tables keyed on b-k of them) whose "
      "memory fits; designs considered:\n");
  for (const std::string& line : plan->alternatives) out += Format("  %s\n", line.c_str());
  return FinishCommand("plan", &output);
}

}  // namespace

void AddPlanCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* command =
      app->add_subcommand("plan", "Choose an index design for N fingerprints and k");
  command->footer(
      "Prints the design the index would use, the expected candidates verified per query, the "
      "bytes\n"
      "per fingerprint, and every exact design considered with why it lost.\n"
      "Example:\n"
      "  neardup plan --n 1e9 --k 3 --memory 64G");
  command->add_option("--n", flags->n, "Number of fingerprints (1e9 and 1000000000 both work)")
      ->required();
  command->add_option("-k,--k", flags->k, "Largest Hamming distance queried")
      ->check(CLI::Range(0, 7))
      ->capture_default_str();
  command->add_option("--memory", flags->memory, "Memory budget, e.g. 64G (default: none)")
      ->transform(SizeValidator());
  command->callback([flags, exit_code] { *exit_code = RunPlan(*flags); });
}

}  // namespace neardup::cli
