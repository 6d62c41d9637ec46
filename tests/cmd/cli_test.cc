// The `volcache` command line as a user meets it: usage errors exit 2 with one line naming
// the flag, --version and --help exit 0, a workload that yields no jobs is refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace volcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome RunVolcache(const std::string& args) {
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "cmd" / "volcache";
  Outcome o;
  FILE* p = popen((bin.string() + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.output.append(buf.data(), n);
  int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

size_t Lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(CliTest, UsageErrorsExitTwoWithOneLineNamingTheFlag) {
  for (const auto& [args, flag] :
       std::vector<std::pair<std::string, std::string>>{{"run --jobs abc", "--jobs"},
                                                        {"run --bogus", "--bogus"},
                                                        {"run --score fastest", "--score"},
                                                        {"run --topology racks:0", "--topology"},
                                                        {"run --topology racks:8,leaves:2", "--topology"},
                                                        {"run --topology-mode strict", "--topology-mode"},
                                                        {"run --topology-tier 3", "--topology-tier"},
                                                        {"serve --kube-api-qps -1", "--kube-api-qps"},
                                                        {"", "subcommand"},
                                                        {"replay", "FILE"}}) {
    Outcome o = RunVolcache(args);
    EXPECT_EQ(o.exit_code, 2) << args << ": " << o.output;
    EXPECT_EQ(Lines(o.output), 1u) << args << ": " << o.output;
    EXPECT_THAT(o.output, StartsWith("volcache: ")) << args;
    EXPECT_THAT(o.output, HasSubstr(flag)) << args;
  }
}

TEST(CliTest, VersionAndHelpExitZero) {
  Outcome v = RunVolcache("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_THAT(v.output, StartsWith("volcache "));
  Outcome h = RunVolcache("run --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_THAT(h.output, HasSubstr("--workload"));
}

// Each trace has its own default slice (sim::DefaultTraceSlice): `run --workload
// trace:alibaba` with no --skip/--jobs runs (Philly's skip of 20,000 is past Alibaba's 8,152
// jobs), Philly keeps its own, and a --skip or --jobs given replaces only its own half.
TEST(CliTest, EachTraceRunsItsOwnDefaultSlice) {
  constexpr char kShort[] = " --duration 1m --no-admin -q --report json";
  struct Case {
    std::string args, slice;
    int total;
  };
  for (const Case& c : std::vector<Case>{
           {"--workload trace:alibaba", "workload trace:alibaba (skip 4000, jobs 1000)", 1000},
           {"", "workload trace:philly (skip 20000, jobs 1000)", 1000},
           {"--workload trace:philly", "workload trace:philly (skip 20000, jobs 1000)", 1000},
           {"--workload trace:alibaba --skip 8000", "workload trace:alibaba (skip 8000, jobs 1000)", 152},
           {"--workload trace:alibaba --jobs 5", "workload trace:alibaba (skip 4000, jobs 5)", 5},
       }) {
    Outcome o = RunVolcache("-v 2 run " + c.args + kShort);
    EXPECT_EQ(o.exit_code, 0) << c.args << ": " << o.output;
    EXPECT_THAT(o.output, HasSubstr(c.slice)) << c.args;
    EXPECT_THAT(o.output, HasSubstr("\"jobs\":{\"total\":" + std::to_string(c.total) + ",")) << c.args;
  }
  // --help says so.
  Outcome h = RunVolcache("run --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_THAT(h.output, HasSubstr("(default: 20000 for trace:philly, 4000 for trace:alibaba)"));
  EXPECT_THAT(h.output, HasSubstr("(default: 1000 for trace:philly, 1000 for trace:alibaba)"));
}

TEST(CliTest, RunRefusesAWorkloadWithNoJobs) {
  Outcome o = RunVolcache("run --workload trace:alibaba --skip 100000 --no-admin");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("selects no jobs"));
  EXPECT_THAT(o.output, Not(HasSubstr("makespan")));
}

}  // namespace
}  // namespace volcache
