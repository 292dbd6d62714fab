// A directory of one test's own files under /tmp, removed with everything in it when the test
// ends: the CLI and metrics tests write configs and documents there and hand lb their paths.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace lb::test {

class TempDir {
 public:
  // /tmp/lb_TAG_XXXXXX; ok() says whether it could be made.
  explicit TempDir(const std::string& tag = "it") {
    std::string tmpl = "/tmp/lb_" + tag + "_XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Writes `text` to NAME in the directory; its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace lb::test
