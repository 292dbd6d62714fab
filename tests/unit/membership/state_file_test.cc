// The membership state file (lb/membership/state_file.h): what is written is read back, a
// write replaces the file whole or not at all, and a file that is not one is an error naming
// its path.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lb/membership/state_file.h"

namespace lb {
namespace {

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lb-state-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/cache.json";
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0755);
    for (const auto& name : entries()) {
      const std::string p = dir_ + "/" + name;
      if (rmdir(p.c_str()) != 0) unlink(p.c_str());
    }
    rmdir(dir_.c_str());
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* d = opendir(dir_.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") out.push_back(name);
    }
    closedir(d);
    return out;
  }

  std::string contents() const {
    std::ifstream f(path_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  void writeRaw(const std::string& bytes) const {
    std::ofstream f(path_);
    f << bytes;
  }

  static MembershipState sample(int64_t revision) {
    return {"cache", "/lb/prod/clusters/cache", revision,
            "{\"backends\": [\n  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}\n]}\n"};
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StateFileTest, RoundTrip) {
  std::string error;
  ASSERT_TRUE(writeMembershipState(path_, sample(42), &error)) << error;
  auto read = readMembershipState(path_);
  ASSERT_TRUE(read.ok()) << read.errors()[0].format();
  EXPECT_EQ(read->cluster, "cache");
  EXPECT_EQ(read->key, "/lb/prod/clusters/cache");
  EXPECT_EQ(read->revision, 42);
  EXPECT_EQ(read->document, sample(42).document);
}

TEST_F(StateFileTest, NoTempFileLeftAfterAWrite) {
  std::string error;
  ASSERT_TRUE(writeMembershipState(path_, sample(1), &error)) << error;
  ASSERT_TRUE(writeMembershipState(path_, sample(2), &error)) << error;
  EXPECT_EQ(entries(), std::vector<std::string>{"cache.json"});
  EXPECT_EQ(readMembershipState(path_)->revision, 2);
}

// The temp file's name is taken by a directory, so the write fails after the old file was
// written: whatever fails, the file under the final name stays whole. (Works as root too,
// where a read-only directory would not stop the write.)
TEST_F(StateFileTest, FailedWriteLeavesTheOldFileWhole) {
  std::string error;
  ASSERT_TRUE(writeMembershipState(path_, sample(7), &error)) << error;
  const std::string before = contents();
  const std::string tmp = path_ + ".tmp." + std::to_string(getpid());
  ASSERT_EQ(mkdir(tmp.c_str(), 0755), 0);
  EXPECT_FALSE(writeMembershipState(path_, sample(8), &error));
  EXPECT_NE(error.find(tmp), std::string::npos) << error;
  EXPECT_NE(error.find("Is a directory"), std::string::npos) << error;
  EXPECT_EQ(contents(), before);
  EXPECT_EQ(readMembershipState(path_)->revision, 7);
}

TEST_F(StateFileTest, UnwritableDirectoryFailsAndLeavesTheOldFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes into a read-only directory";
  std::string error;
  ASSERT_TRUE(writeMembershipState(path_, sample(7), &error)) << error;
  ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);
  EXPECT_FALSE(writeMembershipState(path_, sample(8), &error));
  EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;
  EXPECT_EQ(readMembershipState(path_)->revision, 7);
}

TEST_F(StateFileTest, MissingDirectoryIsAnErrorNamingTheTempFile) {
  std::string error;
  EXPECT_FALSE(writeMembershipState(dir_ + "/no/such/dir/cache.json", sample(1), &error));
  EXPECT_NE(error.find("cannot create " + dir_ + "/no/such/dir/cache.json.tmp."),
            std::string::npos)
      << error;
}

TEST_F(StateFileTest, GarbageIsAnErrorNamingThePath) {
  writeRaw("{\"cluster\": \"cache\",\n  garbage");
  auto read = readMembershipState(path_);
  ASSERT_FALSE(read.ok());
  const std::string e = read.errors()[0].format();
  EXPECT_EQ(e.substr(0, path_.size() + 5), path_ + ":2:3:") << e;
  EXPECT_NE(e.find("not a membership state file"), std::string::npos) << e;
}

TEST_F(StateFileTest, WrongShapeIsAnErrorNamingThePath) {
  writeRaw("{\"cluster\": \"cache\", \"key\": \"/k\", \"revision\": \"7\", \"document\": \"{}\"}");
  auto read = readMembershipState(path_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.errors()[0].format(),
            path_ + ": not a membership state file: no integer 'revision' >= 1");
}

TEST_F(StateFileTest, MissingFileIsAnError) {
  auto read = readMembershipState(path_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.errors()[0].format(), path_ + ": cannot open: No such file or directory");
}

}  // namespace
}  // namespace lb
