// A user's own program in a study (docs/spec.md "Bring your own program"), end to end through
// `batchlab sweep run` with real mpirun / batchlab-rank processes and a real SQLite file. The
// program is tests/orchestrator/end_to_end/programs/env_program.py: it records what each rank was given
// (RANK, WORLD_SIZE, LOCAL_*, MASTER_*, BATCHLAB_CONFIG, --config, cwd), meets the other ranks at
// MASTER_ADDR:MASTER_PORT as torch's env:// rendezvous does, and speaks the metrics protocol.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"
#include "tests/support/file_text.h"

namespace batchlab::orchestrator {
namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;
namespace fs = boost::filesystem;
using nlohmann::json;
using testing::TempDir;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

class UserProgramTest : public ::testing::Test {
 protected:
  std::string Db() const { return dir_.path() + "/batchlab.db"; }
  std::string Runs() const { return dir_.path() + "/runs"; }

  // Writes a spec whose base runs env_program.py in `launch` mode; `base_patch` and `patch` are
  // JSON merge patches (RFC 7386) of base and of the whole spec.
  std::string WriteSpec(const std::string& name, const std::string& launch,
                        const std::string& base_patch, const std::string& patch) {
    json spec = {
        {"name", name},
        {"base",
         {{"program",
           {{"command", {"/usr/bin/python3", PROGRAM}}, {"launch", launch}, {"workdir", "work"}}},
          {"params", {{"depth", 18}}},
          {"batch_size", 64}}},
        {"resources", {{"retries", 0}}}};
    if (!base_patch.empty()) spec["base"].merge_patch(json::parse(base_patch));
    if (!patch.empty()) spec.merge_patch(json::parse(patch));
    std::string path = dir_.path() + "/" + name + ".json";
    std::ofstream(path) << spec.dump(2);
    fs::create_directories(dir_.path() + "/work");
    return path;
  }

  CliResult Cli(std::vector<std::string> args) {
    std::vector<std::string> a = {"--db", Db()};
    a.insert(a.end(), args.begin(), args.end());
    const std::string out = dir_.path() + "/stdout.txt", err = dir_.path() + "/stderr.txt";
    std::remove(out.c_str());  // boost.process opens without truncating
    std::remove(err.c_str());
    bp::child c(BATCHLAB_BIN, bp::args(a), bp::std_out > out, bp::std_err > err,
                bp::std_in < bp::null);
    c.wait();
    return {c.exit_code(), ReadFileText(out), ReadFileText(err)};
  }

  CliResult Run(const std::string& spec, int slots = 2) {
    return Cli({"sweep", "run", spec, "--runs-dir", Runs(), "--slots", std::to_string(slots)});
  }

  int64_t Query(const std::string& sql) {
    auto db = results::OpenReadOnly(Db());
    EXPECT_TRUE(db.ok()) << db.status().message();
    if (!db.ok()) return -1;
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  }

  // What each rank of every attempt recorded: rank files under runs/<sweep>/<run>/attempt-1/.
  std::vector<json> RankRecords(const std::string& sweep) {
    std::vector<json> out;
    for (fs::recursive_directory_iterator it(Runs() + "/" + sweep), end; it != end; ++it) {
      const std::string name = it->path().filename().string();
      if (name.rfind("rank", 0) == 0 && it->path().extension() == ".json") {
        out.push_back(json::parse(ReadFileText(it->path().string())));
        out.back()["dir"] = it->path().parent_path().string();
      }
    }
    return out;
  }

  void ExpectRanksGotTheirEnvironment(const std::string& sweep, int world) {
    auto ranks = RankRecords(sweep);
    ASSERT_EQ(ranks.size(), static_cast<size_t>(world));
    std::set<std::string> seen_ranks, ports;
    for (const json& r : ranks) {
      seen_ranks.insert(r["RANK"].get<std::string>());
      ports.insert(r["MASTER_PORT"].get<std::string>());
      EXPECT_EQ(r["WORLD_SIZE"], std::to_string(world));
      EXPECT_EQ(r["LOCAL_WORLD_SIZE"], std::to_string(world));
      EXPECT_EQ(r["LOCAL_RANK"], r["RANK"]);
      EXPECT_EQ(r["MASTER_ADDR"], "127.0.0.1");
      const std::string config = r["dir"].get<std::string>() + "/config.json";
      EXPECT_EQ(r["BATCHLAB_CONFIG"], config);
      EXPECT_EQ(r["config_arg"], config);
      EXPECT_EQ(fs::path(r["cwd"].get<std::string>()), fs::path(dir_.path() + "/work"));
      if (r["RANK"] == "0") {
        // Rank 0 met every other rank at MASTER_ADDR:MASTER_PORT.
        EXPECT_EQ(r["met"].size(), static_cast<size_t>(world));
      }
    }
    EXPECT_EQ(seen_ranks.size(), static_cast<size_t>(world));
    EXPECT_EQ(ports.size(), 1u);  // one port per run, shared by its ranks
  }

  TempDir dir_;
};

TEST_F(UserProgramTest, MpirunLaunchGivesEveryRankTheTorchEnvironment) {
  std::string spec = WriteSpec("mp", "mpirun", R"({"nodes": 2})", "");
  CliResult r = Run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND steps = 3"), 1);
  ExpectRanksGotTheirEnvironment("mp", 2);
}

TEST_F(UserProgramTest, TorchrunLaunchSpawnsTheRanksWithoutMpirun) {
  std::string spec = WriteSpec("tr", "torchrun", R"({"ranks_per_node": 4})", "");
  CliResult r = Run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND steps = 3"), 1);
  ExpectRanksGotTheirEnvironment("tr", 4);
  auto launch = json::parse(ReadFileText(RankRecords("tr")[0]["dir"].get<std::string>() + "/launch.json"));
  EXPECT_EQ(launch["argv"][0], "--spawn");  // batchlab-rank --spawn 4 (argv after the executable)
  EXPECT_EQ(launch["argv"][1], "4");
}

TEST_F(UserProgramTest, ConcurrentRunsGetDistinctPortsAndParamsAreSweptAndFiltered) {
  std::string spec = WriteSpec("pp", "torchrun", R"({"params": {"sleep": 1}})",
                               R"({"axes": {"params.depth": [18, 34]}})");
  CliResult r = Run(spec, 4);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ranks = RankRecords("pp");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_NE(ranks[0]["MASTER_PORT"], ranks[1]["MASTER_PORT"]);
  // params.depth is part of the run id and filterable.
  EXPECT_EQ(Query("SELECT count(DISTINCT id) FROM runs"), 2);
  CliResult list =
      Cli({"results", "list", "--sweep", "pp", "--where", "params.depth=34", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  json rows = json::parse(list.out);
  ASSERT_EQ(rows.size(), 1u) << list.out;
  // The analysis labels runs by their swept values, params included.
  CliResult target = Cli({"analyze", "target", "--sweep", "pp", "--target", "loss<=0.5"});
  ASSERT_EQ(target.exit_code, 0) << target.err;
  EXPECT_NE(target.out.find("params.depth=34"), std::string::npos) << target.out;
}

TEST_F(UserProgramTest, CrashHangAndGarbageAreHandledLikeTheRunners) {
  // base.params declares params.behave for the axis.
  std::string spec =
      WriteSpec("bad", "torchrun", R"({"ranks_per_node": 2, "params": {"behave": ""}})",
                R"({"axes": {"params.behave": ["crash", "hang", "garbage"]},
                                   "resources": {"retries": 0, "timeout_seconds": 10}})");
  CliResult r = Run(spec, 4);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // failed runs: exit 1, the sweep went on
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'failed' AND outcome IS NULL"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'timed_out'"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND steps = 3"), 1);
  // The garbage lines became events, the run's valid lines were kept.
  EXPECT_GE(Query("SELECT count(*) FROM events WHERE kind = 'corrupt_metrics_line'"), 1);
}

TEST_F(UserProgramTest, AFailedRunsReasonIsTheProgramsExceptionMessage) {
  // It was "exited 1: Traceback (most recent call last):", the error only in stderr.log.
  std::string spec = WriteSpec("raise", "mpirun", R"({"params": {"behave": "raise"}})",
                               R"({"resources": {"retries": 0}})");
  CliResult r = Run(spec);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("exited 1: ValueError: params.behave asked this program to raise"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'transition' AND message LIKE "
                  "'exit code 1: exited 1: ValueError: params.behave asked this program to raise%'"),
            1);
}

TEST_F(UserProgramTest, BadProgramsAndParamsExit2NamingTheFieldAndWriteNothing) {
  struct Case {
    std::string base_extra, extra, expect;
  };
  const std::string missing = dir_.path() + "/work/no-such-program";
  const std::string not_exec = dir_.path() + "/work/data.txt";
  const std::vector<Case> cases = {
      {fmt::format(R"({{"program": {{"command": ["{}"]}}}})", missing), "",
       "base.program.command[0]"},
      {fmt::format(R"({{"program": {{"command": ["{}"]}}}})", not_exec), "",
       "is not an executable file"},
      {R"({"program": {"command": ["no-such-tool-in-path-xyz"]}})", "", "is not in PATH"},
      {R"({"program": {"command": []}})", "", "base.program.command"},
      {R"({"program": {"command": ["python3"], "workdir": "nope"}})", "", "base.program.workdir"},
      {R"({"program": {"command": ["python3"], "launch": "srun"}})", "", "base.program.launch"},
      {R"({"params": [1, 2]})", "", "base.params"},
      {"", R"({"axes": {"params.dpeth": [1, 2]}})", "axes.params.dpeth"},
      {"", R"({"axes": {"params": [3]}})", "axes.params[0]"},
  };
  for (const Case& c : cases) {
    std::string spec = WriteSpec("b", "mpirun", c.base_extra, c.extra);
    std::ofstream(not_exec) << "data\n";
    CliResult r = Run(spec);
    EXPECT_EQ(r.exit_code, 2) << c.base_extra << c.extra << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.expect << "\n" << r.err;
    EXPECT_FALSE(fs::exists(Db())) << c.expect;
    EXPECT_FALSE(fs::exists(Runs())) << c.expect;
    CliResult plan = Cli({"sweep", "plan", spec});
    EXPECT_EQ(plan.exit_code, 2) << c.expect << "\n" << plan.err;
  }
}

TEST_F(UserProgramTest, ModelAndDataAreTheProgramsOwnAndValidateAsksTheProgram) {
  // A user program's model/data are free-form: no "not one of logreg, mlp, cnn".
  std::string ok = WriteSpec("own", "mpirun",
                             R"({"model": {"name": "resnet18", "depth": 18},
                                 "data": {"name": "imagenet-subset"}})",
                             "");
  CliResult plan = Cli({"sweep", "plan", ok, "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  json config = json::parse(plan.out)["runs"][0]["config"];
  EXPECT_EQ(config["model"], (json{{"name", "resnet18"}, {"depth", 18}}));
  EXPECT_FALSE(config["data"].contains("path"));  // no built-in defaults injected
  EXPECT_EQ(config["params"]["depth"], 18);

  // "validate": true: the program's own --validate refuses params.depth < 0, nothing runs.
  std::string spec =
      WriteSpec("val", "mpirun", R"({"params": {"depth": -1}, "program": {"validate": true}})", "");
  CliResult r = Run(spec);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("params.depth: must be >= 0"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Db()));
  // `sweep plan` runs nothing: the program (which would refuse depth -1) is not started unless
  // --validate asks for it. It used to be started once per distinct config.
  CliResult plan_only = Cli({"sweep", "plan", spec});
  EXPECT_EQ(plan_only.exit_code, 0) << plan_only.err;
  EXPECT_NE(plan_only.err.find("--validate asks it"), std::string::npos) << plan_only.err;
  CliResult asked = Cli({"sweep", "plan", spec, "--validate"});
  EXPECT_EQ(asked.exit_code, 2) << asked.err;
  EXPECT_NE(asked.err.find("params.depth: must be >= 0"), std::string::npos) << asked.err;
}

}  // namespace
}  // namespace batchlab::orchestrator
