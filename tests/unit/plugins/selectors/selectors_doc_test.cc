// docs/selectors.md quotes measured figures; this keeps each one next to the command that
// produced it, so a reader can run it again. The figures themselves are not re-measured here
// (1000 backends x 1M keys takes minutes): what is checked is that
//   - a code block holding a figure starts with the command (`$ lb analyze ...`,
//     `$ make bench ...`) whose output it is;
//   - a table holding figures has its command in backticks in its section (the text since
//     the previous heading) before it, or in the table itself;
//   - a figure in running text (a decimal such as 6.61x; not a paper's section §3.4, not
//     inside `code`) appears in such a block or table;
//   - every `lb analyze` command quoted is one lb analyze accepts, with a selector that exists.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lb/cli/analyze/analyze_options.h"
#include "plugins/builtin.h"

namespace lb {
namespace {

struct Block {
  enum class Kind { kProse, kCode, kTable, kHeading } kind;
  int line;                        // first line, 1-based
  std::vector<std::string> lines;
};

std::vector<Block> splitMarkdown(const std::string& text) {
  std::vector<Block> out;
  std::istringstream in(text);
  int n = 0;
  bool in_code = false;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      if (!in_code) out.push_back({Block::Kind::kCode, n + 1, {}});
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      out.back().lines.push_back(line);
      continue;
    }
    Block::Kind kind = line.rfind("#", 0) == 0   ? Block::Kind::kHeading
                       : line.rfind("|", 0) == 0 ? Block::Kind::kTable
                                                 : Block::Kind::kProse;
    if (kind == Block::Kind::kHeading || out.empty() || out.back().kind != kind)
      out.push_back({kind, n, {}});
    out.back().lines.push_back(line);
  }
  return out;
}

const std::regex kDecimal(R"(\b\d+\.\d+)");
// A table cell that is a measurement: a number with an optional unit, or several joined by /.
#define LB_FIGURE R"(\d[\d.,]*\s*(x|%|ns|µs|us|ms|s|B|kB|KiB|MB|MiB)?)"
const std::regex kFigureCell(R"(^[~<>]?\s*)" LB_FIGURE R"((\s*/\s*)" LB_FIGURE ")*$");
#undef LB_FIGURE
const std::regex kBacktickedCommand(R"(`((lb analyze|make bench)[^`]*)`)");

bool hasFigureCell(const Block& table) {
  for (size_t i = 2; i < table.lines.size(); ++i) {   // past the header and the --- row
    std::istringstream row(table.lines[i]);
    for (std::string cell; std::getline(row, cell, '|');) {
      cell = std::regex_replace(cell, std::regex(R"(\*\*|^\s+|\s+$)"), "");
      if (!cell.empty() && std::regex_match(cell, kFigureCell)) return true;
    }
  }
  return false;
}

bool startsWithCommand(const Block& code) {
  for (const auto& l : code.lines) {
    if (l.empty()) continue;
    return l.rfind("$ lb analyze", 0) == 0 || l.rfind("$ make bench", 0) == 0;
  }
  return false;
}

std::vector<std::string> analyzeCommands(const std::vector<Block>& blocks) {
  std::vector<std::string> out;
  for (const Block& b : blocks)
    for (const auto& l : b.lines) {
      if (b.kind == Block::Kind::kCode && l.rfind("$ lb analyze", 0) == 0)
        out.push_back(l.substr(2));
      for (std::sregex_iterator it(l.begin(), l.end(), kBacktickedCommand), end; it != end; ++it)
        if ((*it)[2] == "lb analyze") out.push_back((*it)[1]);
    }
  return out;
}

std::string readDoc() {
  std::ifstream in(std::string(LB_SOURCE_DIR) + "/docs/selectors.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SelectorsDocTest, EveryFigureComesWithTheCommandThatMeasuredIt) {
  const std::string doc = readDoc();
  ASSERT_FALSE(doc.empty()) << "docs/selectors.md is missing";
  const auto blocks = splitMarkdown(doc);

  std::string measured;   // text of every commanded block and table, for prose figures
  std::string since_last;   // the section so far: text since the previous heading
  int code_figures = 0, table_figures = 0;
  for (const Block& b : blocks) {
    std::string text;
    for (const auto& l : b.lines) text += l + "\n";
    switch (b.kind) {
      case Block::Kind::kHeading:
        since_last.clear();
        break;
      case Block::Kind::kProse:
        since_last += text;
        break;
      case Block::Kind::kCode:
        if (std::regex_search(text, kDecimal)) {
          ++code_figures;
          EXPECT_TRUE(startsWithCommand(b))
              << "docs/selectors.md:" << b.line << ": a block of figures without its command";
          measured += text;
        }
        break;
      case Block::Kind::kTable:
        if (hasFigureCell(b)) {
          ++table_figures;
          EXPECT_TRUE(std::regex_search(since_last + text, kBacktickedCommand))
              << "docs/selectors.md:" << b.line
              << ": a table of figures with no `lb analyze ...` or `make bench ...` before it";
          measured += text;
        }
        since_last += text;
        break;
    }
  }
  EXPECT_GT(code_figures + table_figures, 0);

  for (const Block& b : blocks) {
    if (b.kind != Block::Kind::kProse) continue;
    for (size_t i = 0; i < b.lines.size(); ++i) {
      const std::string l = std::regex_replace(b.lines[i], std::regex("`[^`]*`|§[0-9.]+"), "");
      for (std::sregex_iterator it(l.begin(), l.end(), kDecimal), end; it != end; ++it)
        EXPECT_NE(measured.find(it->str()), std::string::npos)
            << "docs/selectors.md:" << b.line + static_cast<int>(i) << ": " << it->str()
            << " is in no measured block or table";
    }
  }
}

TEST(SelectorsDocTest, EveryAnalyzeCommandQuotedIsOneLbAccepts) {
  const auto commands = analyzeCommands(splitMarkdown(readDoc()));
  ASSERT_FALSE(commands.empty());
  for (const auto& command : commands) {
    std::vector<std::string> words;
    std::istringstream in(command);
    for (std::string w; in >> w;) words.push_back(w);
    ASSERT_GE(words.size(), 2u);
    std::vector<char*> args;
    for (size_t i = 2; i < words.size(); ++i) args.push_back(words[i].data());
    std::string error;
    auto options = parseAnalyzeArgs(args, error);
    ASSERT_TRUE(options.has_value()) << command << ": " << error;
    const std::string& s = options->selector;
    EXPECT_TRUE(s == "all" || s == "mod_n" || findSelector(s) != nullptr) << command;
  }
}

}  // namespace
}  // namespace lb
