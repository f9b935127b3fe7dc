// Character folding: OpenCC's Traditional-to-Simplified table, text tables, and bad tables.
#include "neardup/folding.h"

#include <gtest/gtest.h>

#include "testutil.h"

namespace neardup {
namespace {

const std::string kOpenccTable(kDefaultTraditionalToSimplifiedTable);

TEST(FoldingTest, OpenccTableFoldsTraditionalToSimplified) {
  auto folding = CharacterFolding::Load(kOpenccTable);
  ASSERT_TRUE(folding.ok()) << folding.status().ToString();
  EXPECT_GT((*folding)->entries(), 4000u);  // TSCharacters has about 4100 characters
  // Standard pairs of the two scripts.
  EXPECT_EQ((*folding)->Fold(U'這'), U'这');
  EXPECT_EQ((*folding)->Fold(U'國'), U'国');
  EXPECT_EQ((*folding)->Fold(U'學'), U'学');
  EXPECT_EQ((*folding)->Fold(U'这'), U'这');  // already Simplified
  EXPECT_EQ((*folding)->Fold(U'a'), U'a');
  EXPECT_EQ((*folding)->Fold(0x10FFFF), char32_t{0x10FFFF});
  std::string out;
  (*folding)->FoldUtf8("這個國家 text 123", &out);
  EXPECT_EQ(out, "这个国家 text 123");
}

TEST(FoldingTest, TextTable) {
  testing::TempDir dir;
  const std::string path = dir.File("table.txt", "# comment\n\n這\t这\n國\t国 囯\nab\tc\n個\txy\n");
  auto folding = CharacterFolding::Load(path);
  ASSERT_TRUE(folding.ok()) << folding.status().ToString();
  EXPECT_EQ((*folding)->entries(), 2u);
  EXPECT_EQ((*folding)->ignored_entries(), 2u);  // "ab" and "xy" are not single code points
  std::string out;
  (*folding)->FoldUtf8("這個國", &out);
  EXPECT_EQ(out, "这個国");
}

TEST(FoldingTest, MissingAndBadTablesAreErrors) {
  testing::TempDir dir;
  auto missing = CharacterFolding::Load(dir.Path("none.ocd2"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("libopencc-data"), std::string::npos);

  auto no_tab = CharacterFolding::Load(dir.File("bad.txt", "這\t这\n這这\n"));
  ASSERT_FALSE(no_tab.ok());
  EXPECT_EQ(no_tab.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(no_tab.status().message().find("bad.txt:2:"), std::string::npos)
      << no_tab.status().message();

  auto garbage = CharacterFolding::Load(dir.File("garbage.ocd2", std::string(200, 'x')));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), Status::Code::kCorruption);
  auto truncated = CharacterFolding::Load(dir.File("empty.ocd2", ""));
  EXPECT_FALSE(truncated.ok());

  auto empty = CharacterFolding::Load(dir.File("empty.txt", "# nothing\n"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), Status::Code::kCorruption);

  EXPECT_FALSE(CharacterFolding::Load(dir.Path("")).ok());  // a folder
}

TEST(FoldingTest, SharedTablesAreLoadedOnce) {
  auto a = CharacterFolding::LoadShared(kOpenccTable);
  auto b = CharacterFolding::LoadShared(kOpenccTable);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
}

}  // namespace
}  // namespace neardup
