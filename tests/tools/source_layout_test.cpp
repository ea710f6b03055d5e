// The source tree keeps the shape docs/architecture.md promises: each module
// includes only modules before it in the documented order, and no source file
// is over 700 lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TAILOR_SOURCE_DIR;

// The module order, read from the one line of docs/architecture.md that
// draws it ("core → linalg → … → cli").
std::vector<std::string> documented_order() {
  std::ifstream in(kRoot / "docs" / "architecture.md");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("core → ", 0) != 0) continue;
    std::vector<std::string> order;
    std::string arrow = " → ";
    size_t start = 0;
    for (;;) {
      size_t at = line.find(arrow, start);
      order.push_back(line.substr(start, at == std::string::npos ? std::string::npos : at - start));
      if (at == std::string::npos) break;
      start = at + arrow.size();
    }
    return order;
  }
  return {};
}

// Every C++ source and header under src/, include/tailor/, tools/, tests/, bench/.
std::vector<fs::path> sources() {
  std::vector<fs::path> files;
  for (const char* dir : {"src", "include/tailor", "tools", "tests", "bench", "python"}) {
    if (!fs::exists(kRoot / dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / dir)) {
      if (!entry.is_regular_file()) continue;
      auto ext = entry.path().extension();
      if (ext == ".cpp" || ext == ".h" || ext == ".hpp" || ext == ".cc")
        files.push_back(entry.path());
    }
  }
  return files;
}

TEST(SourceLayout, ArchitectureDocumentsTheModuleOrder) {
  auto order = documented_order();
  ASSERT_GE(order.size(), 10u) << "no 'core → …' line in docs/architecture.md";
  EXPECT_EQ(order.front(), "core");
  EXPECT_EQ(order.back(), "cli");
  // Every library module directory is in the order.
  for (const auto& entry : fs::directory_iterator(kRoot / "src")) {
    if (!entry.is_directory()) continue;
    auto name = entry.path().filename().string();
    EXPECT_NE(std::find(order.begin(), order.end(), name), order.end())
        << "src/" << name << " is not in docs/architecture.md's module order";
  }
}

TEST(SourceLayout, NoModuleIncludesAModuleAboveIt) {
  auto order = documented_order();
  ASSERT_FALSE(order.empty());
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  const std::regex include(R"(^\s*#\s*include\s*[<"]tailor/([a-z_]+)/)");
  size_t checked = 0;
  for (const char* root : {"src", "include/tailor"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / root)) {
      if (!entry.is_regular_file()) continue;
      auto rel = fs::relative(entry.path(), kRoot / root);
      auto module = rel.begin()->string();
      if (!rank.count(module) || std::distance(rel.begin(), rel.end()) < 2) continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch match;
        if (!std::regex_search(line, match, include)) continue;
        ++checked;
        auto target = match[1].str();
        ASSERT_TRUE(rank.count(target))
            << entry.path() << ":" << number << " includes unknown module " << target;
        EXPECT_LE(rank[target], rank[module]) << entry.path() << ":" << number << ": " << module
                                              << " includes " << target << ", a module above it";
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(SourceLayout, NoSourceFileIsOver700Lines) {
  auto files = sources();
  ASSERT_GT(files.size(), 100u);
  for (const auto& file : files) {
    std::ifstream in(file);
    size_t lines = 0;
    std::string line;
    while (std::getline(in, line)) ++lines;
    EXPECT_LE(lines, 700u) << file;
  }
}

}  // namespace
