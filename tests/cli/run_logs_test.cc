// What a run leaves in its attempt folder's stderr.log, through the real `batchlab sweep run`,
// real mpirun and fake_runner at the runner seam: a run that ends with a protocol outcome
// (exit 3, target reached) carries no mpirun notice of a "non-zero exit code"; a run that failed
// keeps it, as written. And the notice filter itself, on Open MPI's exact text.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "orchestrator/process/stderr_copier.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace batchlab {
namespace {

namespace fs = std::filesystem;

const char* const kPrimaryNotice =
    "--------------------------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "--------------------------------------------------------------------------\n";
const char* const kDetectedNotice =
    "--------------------------------------------------------------------------\n"
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "the job to be terminated. The first process to do so was:\n"
    "\n"
    "  Process name: [[6242,1],0]\n"
    "  Exit code:    3\n"
    "--------------------------------------------------------------------------\n";
const char* const kOtherNotice =
    "--------------------------------------------------------------------------\n"
    "There are not enough slots available in the system to satisfy the 4\n"
    "slots that were requested by the application.\n"
    "--------------------------------------------------------------------------\n";

TEST(MpirunNoticeFilterTest, DropsExitNoticesOfOutcomesOnlyAndKeepsEverythingElse) {
  const std::string program = "step 1\nwarning: slow\n";
  const std::string all = program + kPrimaryNotice + kDetectedNotice + kOtherNotice + "tail";
  for (bool outcome : {true, false}) {
    orchestrator::MpirunNoticeFilter f;
    std::string out;
    for (char c : all) out += f.Feed(std::string(1, c));  // however the pipe splits it
    out += f.Finish(outcome);
    if (outcome) {
      EXPECT_EQ(out, program + kOtherNotice + "tail");
    } else {
      // A failure keeps the notices (after the text that followed them: they are held back).
      EXPECT_EQ(out, program + kOtherNotice + kPrimaryNotice + kDetectedNotice + "tail");
    }
  }
}

// The stderr.log files under `dir`.
std::vector<std::string> StderrLogs(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() == "stderr.log" &&
        e.path().string().find("/.workers/") == std::string::npos) {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
    }
  }
  return out;
}

TEST(RunLogsTest, AProtocolOutcomeLeavesNoMpirunNoticeInStderrLog) {
  testing::TempDir dir;
  struct Case {
    const char* exit_code;
    int cli_exit;
    bool notice;
  };
  for (const Case& c : {Case{"3", 0, false}, Case{"1", 1, true}}) {
    const std::string spec = dir.File(std::string("s") + c.exit_code + ".json");
    std::ofstream(spec) << R"({"name": "s)" << c.exit_code
                        << R"(", "base": {"mode": "noop", "batch_size": 64, "budget": {"steps": 3},
        "ranks_per_node": 2}, "resources": {"retries": 0},
        "launch": {"env": {"FAKE_RUNNER_EXIT": ")"
                        << c.exit_code << R"("}}})";
    const std::string runs = dir.File(std::string("runs") + c.exit_code);
    const auto r = batchlab::testing::RunCommand(
        std::string(BATCHLAB_BIN) + " --db '" + dir.File("b.db") + "' sweep run '" + spec +
        "' --runs-dir '" + runs + "' --runner '" + FAKE_RUNNER + "' --workers fresh --slots 2");
    EXPECT_EQ(r.exit_code, c.cli_exit) << r.output;
    const std::vector<std::string> logs = StderrLogs(runs);
    ASSERT_EQ(logs.size(), 1u) << r.output;
    EXPECT_EQ(logs[0].find("non-zero exit code") != std::string::npos ||
                  logs[0].find("non-zero status") != std::string::npos,
              c.notice)
        << "exit " << c.exit_code << ":\n"
        << logs[0];
  }
}

}  // namespace
}  // namespace batchlab
