// lb's own flags (lb/app/command_line.h): the spellings nginx and HAProxy users type next to
// the long ones, and one clear line for each usage error.
#include "lb/app/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lb {
namespace {

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "lb");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseCommandLine(static_cast<int>(args.size()), argv.data());
}

using Action = CommandLine::Action;

TEST(CommandLineTest, ShortConfigRuns) {
  auto cl = parse({"-c", "/etc/lb/lb.toml"});
  EXPECT_EQ(cl.action, Action::kRun);
  EXPECT_EQ(cl.config_path, "/etc/lb/lb.toml");
}

TEST(CommandLineTest, LongConfigInBothFormsRuns) {
  EXPECT_EQ(parse({"--config", "a.toml"}).config_path, "a.toml");
  EXPECT_EQ(parse({"--config=a.toml"}).config_path, "a.toml");
  EXPECT_EQ(parse({"-ca.toml"}).config_path, "a.toml");
}

TEST(CommandLineTest, CheckInEverySpelling) {
  for (std::vector<std::string> args : {std::vector<std::string>{"-t", "-c", "a.toml"},
                                        {"-tc", "a.toml"},
                                        {"-c", "a.toml", "-t"},
                                        {"--check", "--config", "a.toml"},
                                        {"--check", "--config=a.toml"}}) {
    auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::kCheck) << args[0] << " " << cl.error;
    EXPECT_EQ(cl.config_path, "a.toml");
  }
}

TEST(CommandLineTest, VersionAndHelpNeedNoConfig) {
  EXPECT_EQ(parse({"-v"}).action, Action::kVersion);
  EXPECT_EQ(parse({"--version"}).action, Action::kVersion);
  EXPECT_EQ(parse({"-h"}).action, Action::kHelp);
  EXPECT_EQ(parse({"--help"}).action, Action::kHelp);
  EXPECT_EQ(parse({"-c", "a.toml", "-h"}).action, Action::kHelp);
}

TEST(CommandLineTest, UnknownOptionsAreUsageErrorsNamingThem) {
  auto cl = parse({"--bogus"});
  EXPECT_EQ(cl.action, Action::kUsageError);
  EXPECT_EQ(cl.error, "unknown option '--bogus'");
  cl = parse({"-t", "-x", "-c", "a.toml"});
  EXPECT_EQ(cl.action, Action::kUsageError);
  EXPECT_EQ(cl.error, "unknown option '-x'");
  // HAProxy's -f is not lb's: say so instead of guessing.
  EXPECT_EQ(parse({"-f", "a.toml"}).error, "unknown option '-f'");
}

TEST(CommandLineTest, MissingFileIsAUsageError) {
  EXPECT_EQ(parse({"-c"}).error, "option '-c' needs a FILE");
  EXPECT_EQ(parse({"--config"}).error, "option '--config' needs a FILE");
  EXPECT_EQ(parse({}).error, "no config file: give -c FILE");
  EXPECT_EQ(parse({"-t"}).error, "--check needs the file to check: -t -c FILE");
  EXPECT_EQ(parse({"--config="}).action, Action::kUsageError);
}

TEST(CommandLineTest, StrayWordsAreUsageErrors) {
  EXPECT_EQ(parse({"-c", "a.toml", "extra"}).error, "unexpected argument 'extra'");
  EXPECT_EQ(parse({"a.toml"}).error, "unexpected argument 'a.toml'");
}

TEST(CommandLineTest, ParsesTheSameTwice) {
  // getopt_long keeps global state between calls; the parser resets it.
  EXPECT_EQ(parse({"-t", "-c", "a.toml"}).action, Action::kCheck);
  EXPECT_EQ(parse({"-t", "-c", "a.toml"}).action, Action::kCheck);
}

TEST(CommandLineTest, HelpNamesFlagsSignalsEndpointsFilesAndExitCodes) {
  const std::string help = helpText();
  for (const char* needle :
       {"-c, --config FILE", "-t, --check", "-v, --version", "-h, --help", "HUP", "TERM, INT",
        "a second TERM or INT", "/metrics", "/ready", "/backends", "/ring?cluster=C&key=K",
        "lb.access_log", "/etc/lb/lb.toml", "Exit codes", "  0  ", "  1  ", "  2  ",
        "lb analyze", "lb membership"})
    EXPECT_NE(help.find(needle), std::string::npos) << needle;
}

}  // namespace
}  // namespace lb
