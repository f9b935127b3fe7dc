// Internal test helper: files in a fresh temporary directory (testing::TempDir), removed with the
// object.
#ifndef NEARDUP_SEGMENT_TEST_FILES_H_
#define NEARDUP_SEGMENT_TEST_FILES_H_

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "testutil.h"

namespace neardup::testing {

class TempFiles : public TempDir {
 public:
  // Writes `content` to `name` in the directory (creating its subdirectories) and returns its path.
  std::string Write(const std::string& name, std::string_view content) const {
    const std::string path = Path(name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  const std::string& dir() const { return path(); }
};

// A small HMM model directory (prob_start.py, prob_trans.py, prob_emit.py) in jieba's format.
inline std::string WriteSmallHmm(const TempFiles& files, const std::string& emit_body) {
  files.Write("hmm/prob_start.py",
              "P={'B': -0.26268660809250016,\n 'E': -3.14e+100,\n 'M': -3.14e+100,\n 'S': "
              "-1.4652633398537678}\n");
  files.Write("hmm/prob_trans.py",
              "P={'B': {'E': -0.510825623765990, 'M': -0.916290731874155},\n"
              " 'E': {'B': -0.5897149736854513, 'S': -0.8085250474669937},\n"
              " 'M': {'E': -0.33344856811948514, 'M': -1.2603623820268226},\n"
              " 'S': {'B': -0.7211965654669841, 'S': -0.6658631448798212}}\n");
  files.Write("hmm/prob_emit.py",
              "from __future__ import unicode_literals\n\nP=" + emit_body + "\n");
  return files.dir() + "/hmm";
}

}  // namespace neardup::testing

#endif  // NEARDUP_SEGMENT_TEST_FILES_H_
