// docs/metrics.md against a running lb: every family on /metrics has a row in the doc with the
// same type and labels, and every row names a family /metrics has, unless the row says the
// family exists only under a condition ("present" = `when ...`). The config below switches on
// every condition known today (bounded loads, a handover window, an HTTP and a TCP listener,
// active checks, outlier detection), so those rows are checked too. A feature that adds a family adds its
// row to the doc; nothing here changes.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/repo_file.h"

namespace lb::test {
namespace {

struct Family {
  std::string type;
  std::set<std::string> labels;
  bool conditional = false;   // doc only: present = "when ..."
};

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {   // row[0] is the leading '|'
    if (row[i] == '|') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

// The doc's family rows: `| \`name\` | type | labels | present | meaning | question |`.
std::map<std::string, Family> docFamilies(const std::string& doc, std::string* error) {
  std::map<std::string, Family> out;
  std::istringstream in(doc);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("| `", 0) != 0) continue;
    auto c = cells(line);
    if (c.size() != 6 || c[0].size() < 3 || c[0].back() != '`') {
      *error += "docs/metrics.md:" + std::to_string(line_no) + ": not a 6-cell family row\n";
      continue;
    }
    std::string name = c[0].substr(1, c[0].size() - 2);
    Family f;
    f.type = c[1];
    std::istringstream labels(c[2]);
    for (std::string l; std::getline(labels, l, ',');)
      if (!trim(l).empty()) f.labels.insert(trim(l));
    if (c[3] == "always") {
      f.conditional = false;
    } else if (c[3].rfind("when ", 0) == 0) {
      f.conditional = true;
    } else {
      *error += "docs/metrics.md:" + std::to_string(line_no) + ": present must be `always` or "
                "`when ...`, got '" + c[3] + "'\n";
    }
    if (out.count(name)) *error += "docs/metrics.md: " + name + " has two rows\n";
    out[name] = f;
  }
  return out;
}

// The label names of one sample line's {a="x",b="y"}, values skipped with their escapes.
std::set<std::string> sampleLabels(const std::string& line) {
  std::set<std::string> out;
  size_t at = line.find('{');
  if (at == std::string::npos) return out;
  ++at;
  while (at < line.size() && line[at] != '}') {
    size_t eq = line.find('=', at);
    if (eq == std::string::npos) break;
    out.insert(line.substr(at, eq - at));
    at = eq + 2;   // past ="
    while (at < line.size() && line[at] != '"') at += line[at] == '\\' ? 2 : 1;
    at += 1;       // past the closing quote
    if (at < line.size() && line[at] == ',') ++at;
  }
  return out;
}

// Families of a /metrics body: names and types from `# TYPE`, labels from the samples
// (histograms' `le` and their _bucket/_sum/_count suffixes folded into the family).
std::map<std::string, Family> scrapedFamilies(const std::string& body) {
  std::map<std::string, Family> out;
  std::istringstream in(body);
  std::string current;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      out[name].type = type;
      current = name;
    } else if (!line.empty() && line[0] != '#' && !current.empty()) {
      for (const auto& l : sampleLabels(line))
        if (l != "le") out[current].labels.insert(l);
    }
  }
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

TEST(MetricsDocTest, EveryFamilyOnMetricsIsDocumentedAndEveryDocumentedOneExists) {
  std::string error;
  const auto doc = docFamilies(readWholeFile(repoFile("docs/metrics.md")), &error);
  ASSERT_EQ(error, "");
  ASSERT_FALSE(doc.empty()) << "no family rows in docs/metrics.md";

  const uint16_t http = freePort(), tcp = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(
      "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
          std::to_string(admin) + "\"\n"
          "[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(http) +
          "\"\nprotocol = \"http\"\ncluster = \"bounded\"\n"
          "[listeners.raw]\nlisten = \"127.0.0.1:" + std::to_string(tcp) +
          "\"\nprotocol = \"tcp\"\ncluster = \"plain\"\nhash = [ { source_ip = true } ]\n"
          "[clusters.bounded]\nselector = \"maglev\"\nhash_balance_factor = 125\n"
          "handover = { window = \"1m\" }\n"
          "backends = [ { name = \"a\", address = \"127.0.0.1:9\" },"
          " { name = \"b\", address = \"127.0.0.1:10\", weight = 2 } ]\n"
          "[clusters.plain]\n"
          "health = { interval = \"1s\", timeout = \"100ms\" }\n"
          "outlier = {}\n"
          "backends = [ { name = \"c\", address = \"127.0.0.1:9\" } ]\n",
      {http, tcp, admin}))
      << lb.output();
  auto r = runCommand({"curl", "-sf", localUrl(admin, "/metrics")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto scraped = scrapedFamilies(r.out);
  ASSERT_FALSE(scraped.empty()) << r.out;

  for (const auto& [name, f] : scraped) {
    auto it = doc.find(name);
    if (it == doc.end()) {
      ADD_FAILURE() << name << " (" << f.type << "; " << joined(f.labels)
                    << ") is on /metrics but has no row in docs/metrics.md";
      continue;
    }
    EXPECT_EQ(it->second.type, f.type) << name << ": type in docs/metrics.md";
    EXPECT_EQ(joined(it->second.labels), joined(f.labels)) << name << ": labels in docs/metrics.md";
  }
  for (const auto& [name, f] : doc)
    if (!f.conditional && !scraped.count(name))
      ADD_FAILURE() << name << " is in docs/metrics.md (present: always) but not on /metrics";
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

}  // namespace
}  // namespace lb::test
