// A directory of one test's own files under /tmp, removed with them when the test ends: the
// CLI tests write configs and documents there and hand lb their paths.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace lb::test {

class TempDir {
 public:
  // /tmp/lb_TAG_XXXXXX; ok() says whether it could be made.
  explicit TempDir(const std::string& tag) {
    std::string tmpl = "/tmp/lb_" + tag + "_XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    for (const auto& f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Writes `text` to NAME in the directory; its path.
  std::string writeFile(const std::string& name, const std::string& text) {
    const std::string path = path_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

}  // namespace lb::test
