// The planner: exact designs only, memory budgets respected, and the expected trade-offs.
#include <gtest/gtest.h>

#include "neardup/index.h"

namespace neardup {
namespace {

TEST(PlannerTest, ChoosesAnExactDesignForEveryK) {
  for (int k = 0; k <= 7; ++k) {
    for (uint64_t n :
         {uint64_t{1}, uint64_t{1000}, uint64_t{10'000'000}, uint64_t{1'000'000'000}}) {
      auto plan = PlanDesign(n, k, 0);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      EXPECT_TRUE(plan->design.Validate().ok());
      EXPECT_GE(plan->design.max_exact_k(), k);
      EXPECT_FALSE(plan->alternatives.empty());
    }
  }
}

TEST(PlannerTest, RespectsTheMemoryBudget) {
  const uint64_t n = 10'000'000;
  auto tight = PlanDesign(n, 3, 64 * n);
  ASSERT_TRUE(tight.ok()) << tight.status().ToString();
  EXPECT_LE(tight->bytes_per_fingerprint, 64.0);
  EXPECT_LE(tight->design.tables(), 5);  // 8 bytes per table on top of 21 bytes per fingerprint
  auto loose = PlanDesign(n, 3, 0);
  ASSERT_TRUE(loose.ok());
  EXPECT_LE(loose->cost_per_query_ns, tight->cost_per_query_ns);
  // A bigger index buys more tables with longer keys: fewer candidates per query.
  auto billion = PlanDesign(1'000'000'000, 3, uint64_t{1} << 42);
  ASSERT_TRUE(billion.ok());
  EXPECT_GT(billion->design.tables(), 4);
  EXPECT_LT(billion->candidates_per_query, 1000);
  auto impossible = PlanDesign(n, 3, 20 * n);
  EXPECT_EQ(impossible.status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(PlanDesign(n, 8, 0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(PlanDesign(n, -1, 0).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace neardup
