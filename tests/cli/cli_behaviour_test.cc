// The `batchlab` CLI behaving like one (issue 11): global options before or after the
// subcommand, --format on every command that prints data, per-subcommand help, bad input exits
// 2 naming the flag, no source paths in messages, aligned numbers; and `analyze recommend`
// against the synthetic sweep's closed-form answer.
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/elapsed.h"
#include "tests/support/synthetic_sweep.h"
#include "tests/support/file_text.h"

namespace batchlab {
namespace {

using ::batchlab::testing::ReadFileText;

using analysis::testing::TempDir;

struct Result {
  int code = -1;
  std::string out, err;
};

class CliBehaviourTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    db_ = dir_->File("batchlab.db");
    truth_ = analysis::testing::WriteSyntheticSweep(db_, dir_->path());
  }
  static void TearDownTestSuite() { delete dir_; }

  // `args` as written on a command line (single-quoted where needed); no --db added.
  static Result Raw(const std::string& args) {
    const std::string out = dir_->File("out.txt"), err = dir_->File("err.txt");
    const std::string cmd =
        std::string(BATCHLAB_BINARY) + " " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileText(out), ReadFileText(err)};
  }
  // The global --db after the subcommand, as users type it.
  static Result Run(const std::string& args) { return Raw(args + " --db '" + db_ + "'"); }

  static TempDir* dir_;
  static std::string db_;
  static analysis::testing::SyntheticSweep truth_;
};

TempDir* CliBehaviourTest::dir_ = nullptr;
std::string CliBehaviourTest::db_;
analysis::testing::SyntheticSweep CliBehaviourTest::truth_;

TEST_F(CliBehaviourTest, GlobalDbBeforeOrAfterTheSubcommand) {
  const Result before = Raw("--db '" + db_ + "' results list --sweep synthetic --format csv");
  const Result after = Raw("results list --sweep synthetic --format csv --db '" + db_ + "'");
  const Result middle = Raw("results --db '" + db_ + "' list --sweep synthetic --format csv");
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(middle.code, 0) << middle.err;
  EXPECT_EQ(after.out, before.out);
  EXPECT_EQ(middle.out, before.out);
}

TEST_F(CliBehaviourTest, EveryDataCommandTakesFormatTableCsvJson) {
  const std::vector<std::string> commands = {
      "sweep list",
      "results list --sweep synthetic",
      "results query 'SELECT batch_size, count(*) AS runs FROM run_summary GROUP BY 1'",
      "results export --sweep synthetic",
      "analyze target --sweep synthetic",
      "analyze crit --sweep synthetic --resamples 50",
      "analyze gns --sweep synthetic --resamples 50",
      "analyze pareto --sweep synthetic",
      "analyze scaling --sweep synthetic",
      "analyze project --sweep synthetic",
      "analyze recommend --sweep synthetic --resamples 50",
  };
  for (const std::string& c : commands) {
    const Result table = Run(c);
    EXPECT_EQ(table.code, 0) << c << ": " << table.err;
    EXPECT_EQ(Run(c + " --format table").out, table.out) << c << ": table is not the default";
    const Result csv = Run(c + " --format csv");
    EXPECT_EQ(csv.code, 0) << c << ": " << csv.err;
    const std::string header = csv.out.substr(0, csv.out.find('\n'));
    EXPECT_NE(header.find(','), std::string::npos) << c << ": no CSV header: " << csv.out;
    const Result json = Run(c + " --format json");
    EXPECT_EQ(json.code, 0) << c << ": " << json.err;
    EXPECT_FALSE(nlohmann::json::parse(json.out, nullptr, false).is_discarded())
        << c << ": not JSON: " << json.out;
    const Result bad = Run(c + " --format xml");
    EXPECT_EQ(bad.code, 2) << c;
    EXPECT_NE(bad.err.find("--format"), std::string::npos) << c << ": " << bad.err;
  }
  // JSON Lines where rows stream: one object per line.
  const Result jsonl = Run("results list --sweep synthetic --format jsonl");
  ASSERT_EQ(jsonl.code, 0) << jsonl.err;
  std::istringstream lines(jsonl.out);
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) {
    EXPECT_TRUE(nlohmann::json::parse(l, nullptr, false).is_object()) << l;
  }
  EXPECT_EQ(n, truth_.runs);
  // results show: table or JSON.
  const Result show = Run("results show 0000000000abc000 --format json");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["run"]["batch_size"], 32);
}

TEST_F(CliBehaviourTest, EachSubcommandsHelpListsOnlyItsOwnFlags) {
  struct Case {
    std::string command;
    std::vector<std::string> has, lacks;
  };
  const std::vector<Case> cases = {
      {"analyze gns", {"--beta", "--resamples", "--series"}, {"--target", "--profile", "--prefer"}},
      {"analyze target", {"--target"}, {"--beta", "--resamples", "--profile", "--skip-steps"}},
      {"analyze scaling", {"--skip-steps"}, {"--beta", "--target", "--profile"}},
      {"analyze project", {"--profile", "--device-speedup", "--target"}, {"--beta", "--prefer"}},
      {"analyze recommend", {"--prefer", "--profile", "--target"}, {"--beta", "--series"}},
      {"report", {"--prefer", "--beta", "--profile", "--out"}, {"--series"}},
  };
  for (const Case& c : cases) {
    const Result r = Raw(c.command + " --help");
    ASSERT_EQ(r.code, 0) << c.command;
    for (const std::string& f : c.has)
      EXPECT_NE(r.out.find(f), std::string::npos) << c.command << " " << f;
    for (const std::string& f : c.lacks) {
      EXPECT_EQ(r.out.find(f + " "), std::string::npos) << c.command << " lists " << f;
    }
    EXPECT_NE(r.out.find("--db"), std::string::npos) << c.command << ": the global option";
  }
}

TEST_F(CliBehaviourTest, MalformedTargetExits2NamingIt) {
  const std::vector<std::string> targets = {"acc>=0.8", "test_accuracy=>0.8",
                                            "test_accuracy>=high"};
  const std::vector<std::string> commands = {
      "analyze target --sweep synthetic", "analyze crit --sweep synthetic",
      "analyze recommend --sweep synthetic",
      "report --sweep synthetic --out '" + dir_->File("r") + "'"};
  for (const std::string& target : targets) {
    for (const std::string& c : commands) {
      const Result r = Run(c + " --target '" + target + "'");
      EXPECT_EQ(r.code, 2) << c << " " << target << ": " << r.out;
      EXPECT_NE(r.err.find("--target '"), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
  const Result unknown = Run("analyze crit --sweep synthetic --target 'acc>=0.8'");
  EXPECT_NE(unknown.err.find("'acc'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("test_accuracy"), std::string::npos) << unknown.err;  // the fix
}

TEST_F(CliBehaviourTest, TargetCountsAddUp) {
  // A target on a metric some runs never logged still accounts for every run per batch size.
  for (const std::string& target : {std::string("test_accuracy>=0.85"), std::string("loss<=0.5")}) {
    const Result r = Run("analyze target --sweep synthetic --format csv --target '" + target + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    std::istringstream in(r.out);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header.rfind("batch_size,runs,reached,never_reached,diverged,failed,unfinished,"
                           "no_metric,",
                           0),
              0u)
        << header;
    int rows = 0;
    for (std::string line; std::getline(in, line); ++rows) {
      std::vector<int> v;
      std::istringstream cells(line);
      for (std::string cell; v.size() < 8 && std::getline(cells, cell, ',');) {
        v.push_back(std::stoi(cell));
      }
      ASSERT_EQ(v.size(), 8u) << line;
      EXPECT_EQ(v[1], v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) << target << ": " << line;
    }
    EXPECT_EQ(rows, 5) << r.out;
  }
}

TEST_F(CliBehaviourTest, RecommendPicksTheClosedFormOptimum) {
  // Every run stored flops_per_step = 6 P B, so compute is in FLOPs: S(B) · 6 P B with
  // S = S_min (1 + B_noise/B) is 6 P S_min (B + B_noise), least at the smallest batch (B=32, at
  // lr 0.1); FLOPs do not depend on the rank count, so the tie goes to the fastest: per step
  // c B/K + o + 2(K-1) alpha + 2(K-1)/K n/beta is 5.2 ms on 1 rank, 4.31 ms on 2, 4.16 ms on 4.
  const Result r = Run("analyze recommend --sweep synthetic --prefer compute --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json rec = nlohmann::json::parse(r.out)["recommendation"];
  EXPECT_EQ(rec["compute_unit"], "FLOPs") << rec.dump(2);
  const nlohmann::json& j = rec["measured"];
  EXPECT_EQ(j["choice"]["batch_size"], 32) << j.dump(2);
  EXPECT_EQ(j["choice"]["ranks"], 4);
  EXPECT_DOUBLE_EQ(j["choice"]["compute"].get<double>(),
                   j["choice"]["steps"].get<double>() *
                       analysis::testing::SyntheticSweep::FlopsPerStep(truth_, 32));
  EXPECT_EQ(j["baseline"]["batch_size"], 32);
  const Result text = Run("analyze recommend --sweep synthetic --prefer compute");
  // Named with its other swept value (the synthetic sweep sweeps lr.base).
  EXPECT_NE(text.out.find("B=32 on 4 ranks (lr.base=0.1):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" FLOPs)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PROJECTION (ib-100g"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(B_crit)"), std::string::npos) << text.out;
  EXPECT_EQ(Run("analyze recommend --sweep synthetic --prefer fast").code, 2);
}

TEST_F(CliBehaviourTest, SweepListCountsRunsByOutcome) {
  const Result r = Run("sweep list --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["sweep"], "synthetic");
  EXPECT_EQ(j[0]["runs"], truth_.runs);
  EXPECT_EQ(j[0]["pending"], 1);
  EXPECT_EQ(j[0]["finished"], truth_.runs - 1);
}

TEST_F(CliBehaviourTest, MessagesNameNoSourcePaths) {
  std::ofstream(dir_->File("junk.db")) << std::string(4096, 'x');
  const std::vector<std::string> failing = {
      "results query 'SELEC 1'",
      "results query 'SELECT * FROM no_such_table'",
      "analyze crit --sweep nosuch",
      "results show ffff",
      "results list --where 'no_such_column=3'",
  };
  for (const std::string& c : failing) {
    const Result r = Run(c);
    EXPECT_EQ(r.code, 2) << c << ": " << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex(R"(\.(cc|h):[0-9]+)"))) << c << ": " << r.err;
    EXPECT_EQ(r.err.find("/work/"), std::string::npos) << c << ": " << r.err;
  }
  const Result junk = Raw("results list --db '" + dir_->File("junk.db") + "'");
  EXPECT_EQ(junk.code, 2);
  EXPECT_FALSE(std::regex_search(junk.err, std::regex(R"(\.(cc|h):[0-9]+)"))) << junk.err;
}

TEST_F(CliBehaviourTest, TableNumbersAreRightAlignedInOneStyle) {
  // x from 10.67 to 170.7; z from 1.067e-04 to 1.707e-03, which needs the scientific style for
  // its small end, so the whole column takes it.
  const Result r = Run(
      "results query 'SELECT run_id, batch_size, batch_size / 3.0 AS x, batch_size / 300000.0 AS z "
      "FROM run_summary ORDER BY run_id'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), static_cast<size_t>(truth_.runs) + 2) << r.out;
  const std::regex row(R"(^[0-9a-f]{16}  +[0-9]+  +([0-9.]+)  +([0-9.e+-]+)$)");
  for (size_t i = 2; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, row)) << lines[i];
    EXPECT_EQ(lines[i].size(), lines[1].size()) << "not right-aligned: " << lines[i];
    std::string x = m[1].str();
    x.erase(std::remove(x.begin(), x.end(), '.'), x.end());
    EXPECT_EQ(x.size(), 4u) << "x not 4 significant digits: " << lines[i];
    EXPECT_TRUE(std::regex_match(m[2].str(), std::regex(R"([0-9]\.[0-9]{3}e-0[34])"))) << lines[i];
  }
}

TEST_F(CliBehaviourTest, MistypedCommandsAndFlagsNameTheNearestOne) {
  struct Case {
    std::string args;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      // Was "A subcommand is required", no choices, no suggestion.
      {"swep list", {"unknown command 'swep' for `batchlab`", "did you mean 'sweep'?", "results"}},
      {"analyze critt --sweep synthetic",
       {"unknown command 'critt' for `batchlab analyze`", "did you mean 'crit'?"}},
      {"results list --sweep synthetic --formt csv",
       {"unknown flag '--formt' for `batchlab results list`", "did you mean '--format'?"}},
      {"sweep", {"`batchlab sweep` needs a subcommand: run, plan, list, status"}},
      {"", {"`batchlab` needs a subcommand: sweep, results, analyze, report, ui"}},
      {"results list --format xml", {"--format"}},
  };
  for (const Case& c : cases) {
    const Result r = Run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
    // One error style: the prefix once, at the start.
    EXPECT_EQ(r.err.rfind("batchlab: error: ", 0), 0u) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.find("error:", 17), std::string::npos) << c.args << ": " << r.err;
    for (const std::string& s : c.says) {
      EXPECT_NE(r.err.find(s), std::string::npos) << c.args << ": " << r.err;
    }
  }
}

TEST_F(CliBehaviourTest, MistypedSpecFieldsNameTheNearestOne) {
  struct Case {
    std::string spec, says;
  };
  const std::vector<Case> cases = {
      {R"({"name": "t", "base": {"batch_szie": 64}})", "did you mean 'batch_size'?"},
      {R"({"name": "t", "base": {"batch_size": 64}, "axis": {}})", "did you mean 'axes'?"},
      {R"({"name": "t", "base": {"batch_size": 64}, "axes": {"batch_szie": [64, 128]}})",
       "did you mean 'batch_size'?"},
      {R"({"name": "t", "base": {"batch_size": 64, "optimizer": {"nmae": "sgd"}}})",
       "did you mean 'name'?"},
  };
  for (const Case& c : cases) {
    const std::string spec = dir_->File("typo.json");
    std::ofstream(spec) << c.spec;
    const Result r = Run("sweep plan '" + spec + "' --no-validate");
    EXPECT_EQ(r.code, 2) << c.spec;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.spec << ": " << r.err;
  }
}

TEST_F(CliBehaviourTest, SpecReadingStopsAtTheLimit) {
  // /dev/zero never ends: the limit must be checked while reading (it read 512 MiB, >10 s).
  const auto start = std::chrono::steady_clock::now();
  const Result r = Raw("sweep plan /dev/zero");
  const double seconds = SecondsSince(start);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("more than the 16777216 bytes a spec may have"), std::string::npos)
      << r.err;
  EXPECT_LT(seconds, 5) << "read far past the limit";
}

TEST_F(CliBehaviourTest, PlanCountsAgreeWithTheirNouns) {
  const std::string one = dir_->File("one.json");
  std::ofstream(one) << R"({"name": "one", "base": {"mode": "noop", "batch_size": 64}})";
  const Result r = Run("sweep plan '" + one + "' --no-validate");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("): 1 run\n"), std::string::npos) << r.out;  // was "1 runs"
  EXPECT_NE(r.out.find("1 grid point, 1 run"), std::string::npos) << r.out;
  const std::string two = dir_->File("two.json");
  std::ofstream(two) << R"({"name": "two", "base": {"mode": "noop"},
      "axes": {"batch_size": [64, 128, 64]}})";
  const Result r2 = Run("sweep plan '" + two + "' --no-validate");
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_NE(r2.out.find("): 2 runs\n"), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("3 grid points, 1 duplicate merged, 2 runs"), std::string::npos) << r2.out;
}

TEST_F(CliBehaviourTest, TargetOutsideTheMetricsRangeIsWarnedAbout) {
  // An accuracy is a fraction: 80 was accepted silently ("no recommendation", every run "never
  // reached", exit 0).
  const Result r = Run("analyze recommend --sweep synthetic --target 'test_accuracy>=80'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("batchlab: warning: --target 'test_accuracy>=80': test_accuracy is a "
                       "fraction in [0, 1], so no run can meet it (for 80% write "
                       "'test_accuracy>=0.8')"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("no run reached it; the best test_accuracy observed is 0\\.[0-9]+ \\(run "
                        "[0-9a-f]+\\)")))
      << r.err;
  // A target some run met: no warning.
  const Result ok = Run("analyze target --sweep synthetic --target 'test_accuracy>=0.85'");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;
}

TEST_F(CliBehaviourTest, SpecTargetOutsideTheMetricsRangeIsRefusedBeforeAnythingRuns) {
  // `test_accuracy >= 80` (a percent) was accepted by plan and run, and every run burnt its whole
  // budget; only `analyze --target` warned. Now plan and run exit 2 naming the field and the
  // fix, the database not even created; --force proceeds.
  struct Case {
    std::string target, source, says;
  };
  const std::vector<Case> cases = {
      {R"("target": {"metric": "test_accuracy", "op": ">=", "value": 80})", "base.target.value",
       "target test_accuracy >= 80: test_accuracy is a fraction in [0, 1], so no run can meet "
       "it; for 80% write 0.8, or pass --force to run it anyway"},
      {R"("target": {"metric": "test_loss", "op": "<", "value": -0.5})", "base.target.value",
       "test_loss is never negative, so no run can meet it; or pass --force"},
  };
  for (const Case& c : cases) {
    const std::string spec = dir_->File("percent.json");
    std::ofstream(spec) << R"({"name": "percent", "base": {"mode": "noop", "batch_size": 64, )"
                        << c.target << "}}";
    const std::string db = dir_->File("percent.db");
    for (const std::string cmd : {"sweep plan", "sweep run"}) {
      const Result r = Raw(cmd + " '" + spec + "' --no-validate --db '" + db + "'");
      EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
      EXPECT_EQ(r.err.rfind("batchlab: error: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(c.source + ": " + ""), std::string::npos) << cmd << ": " << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << cmd << ": " << r.err;
      EXPECT_FALSE(std::ifstream(db).good()) << cmd << ": the database was created";
    }
    const Result forced = Raw("sweep plan '" + spec + "' --no-validate --force");
    EXPECT_EQ(forced.code, 0) << forced.err;
  }
  // A target swept as a whole is named by its axis; one within the range passes.
  const std::string swept = dir_->File("swept.json");
  std::ofstream(swept) << R"({"name": "swept", "base": {"mode": "noop", "batch_size": 64},
      "axes": {"target": [{"metric": "test_accuracy", "op": ">=", "value": 0.8},
                          {"metric": "test_accuracy", "op": ">=", "value": 90}]}})";
  const Result r = Raw("sweep plan '" + swept + "' --no-validate");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("axes.target[1]: target test_accuracy >= 90"), std::string::npos)
      << r.err;
}

// The numbers people read: every non-integer number printed by `analyze` (table format) and in
// the report (its stdout summary and its Markdown) has at most 4 significant digits, and a
// sentence never writes one in e-notation between 0.001 and a million ("1e+02% at worst").
// Integers are exact and left alone. Once: "51.9278814984164%", "RMS relative residual
// 11.590010262562622%", "median 19.873229586779395 ... (range 8.04288006628869 to ...)".
// Tokens that look like one real number (digits, one '.', an optional exponent) standing alone:
// not part of a word, a run id, a version ("0.3.1") or a path.
std::vector<std::string> RealNumbers(const std::string& line) {
  std::vector<std::string> out;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < line.size();) {
    if (!std::isdigit(static_cast<unsigned char>(line[i])) ||
        (i > 0 && (word(line[i - 1]) || line[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    bool real = false;
    if (j + 1 < line.size() && line[j] == '.' && std::isdigit(static_cast<unsigned char>(line[j + 1]))) {
      real = true;
      for (++j; j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]));) ++j;
    }
    if (j + 1 < line.size() && (line[j] == 'e' || line[j] == 'E') &&
        (line[j + 1] == '+' || line[j + 1] == '-')) {
      real = true;
      for (j += 2; j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]));) ++j;
    }
    const bool alone = j >= line.size() || !(word(line[j]) || (line[j] == '.' && j + 1 < line.size() &&
                                                              std::isdigit(static_cast<unsigned char>(line[j + 1]))));
    if (real && alone) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

int SignificantDigits(const std::string& number) {
  const std::string mantissa = number.substr(0, number.find_first_of("eE"));
  std::string digits;
  for (char c : mantissa) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  const size_t first = digits.find_first_not_of('0');
  return first == std::string::npos ? 1 : static_cast<int>(digits.size() - first);
}

// Where `text` breaks the rule; `markdown`: table rows start with '|', the rest is prose; else
// a line with columns (two spaces between words) is a table row.
std::vector<std::string> UnformattedNumbers(const std::string& text, bool markdown) {
  std::vector<std::string> bad;
  std::istringstream in(text);
  bool fence = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fence = !fence;
    if (fence) continue;
    const size_t start = line.find_first_not_of(' ');
    const std::string body = start == std::string::npos ? "" : line.substr(start);
    const bool prose = markdown ? body.rfind('|', 0) != 0 : body.find("  ") == std::string::npos;
    for (const std::string& n : RealNumbers(body)) {
      const size_t e = n.find_first_of("eE");
      const double v = std::fabs(std::stod(n));
      if (SignificantDigits(n) > 4 ||
          (prose && e != std::string::npos && v >= 1e-3 && v < 1e6)) {
        bad.push_back(n + "  in: " + line);
      }
    }
  }
  return bad;
}

TEST_F(CliBehaviourTest, NoUnformattedNumberInAnyAnalyzeOutputOrTheReport) {
  // The scanner itself: it finds what it is for and passes what is right.
  EXPECT_EQ(UnformattedNumbers("RMS relative residual 11.590010262562622%.", false).size(), 1u);
  EXPECT_EQ(UnformattedNumbers("within 15% (RMS; 1e+02% at worst)", false).size(), 1u);
  EXPECT_EQ(UnformattedNumbers("median 19.9 (range 8.04 to 44.6); run 0a1b2c3d, 10752 steps, "
                               "v0.3.1, 1.25e+15 FLOPs",
                               false),
            std::vector<std::string>{});
  EXPECT_EQ(UnformattedNumbers("| 1.235e+08 | 0.5000 |", true), std::vector<std::string>{});

  int answered = 0;
  for (const char* kind : {"gns", "target", "crit", "pareto", "sync", "scaling", "project",
                           "recommend", "schedules", "cbs"}) {
    const Result r = Run(std::string("analyze ") + kind + " --sweep synthetic");
    if (r.code != 0) continue;  // not this kind of study (cbs: a branch study)
    ++answered;
    EXPECT_EQ(UnformattedNumbers(r.out, false), std::vector<std::string>{}) << kind;
  }
  EXPECT_GE(answered, 8);
  const std::string out = dir_->File("numbers-report");
  const Result report = Run("report --sweep synthetic --out '" + out + "'");
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_EQ(UnformattedNumbers(report.out, false), std::vector<std::string>{}) << "summary";
  int markdown = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    if (entry.path().extension() != ".md") continue;
    ++markdown;
    EXPECT_EQ(UnformattedNumbers(ReadFileText(entry.path().string()), true),
              std::vector<std::string>{})
        << entry.path();
  }
  EXPECT_GE(markdown, 1);
}

TEST_F(CliBehaviourTest, PlanNotesFollowThePlanOnLinesOfTheirOwn) {
  // Captured together (2>&1) the plan once read "pool 0 GPU(s)note: the user program's configs
  // were not validated": now stdout is flushed and the notes follow the plan, a line each.
  const std::string spec = dir_->File("note.json");
  std::ofstream(spec) << R"({"name": "note", "base": {"batch_size": 64, "budget": {"steps": 10},
      "program": {"command": ["/bin/true"], "validate": true}}})";
  const std::string both = dir_->File("both.txt");
  const std::string cmd = std::string(BATCHLAB_BINARY) + " sweep plan '" + spec + "' >'" + both +
                          "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadFileText(both);
  const std::string text = ReadFileText(both);
  EXPECT_NE(text.find(" GPU(s)\nnote: the user program's configs were not validated"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n') << text;
}

TEST_F(CliBehaviourTest, CsvNumbersAreExactAndPercentsAreNumbers) {
  // Integers were rounded to 4 significant digits (1.075e+04 for 10752) and percents were text.
  const Result target = Run("analyze target --sweep synthetic --format csv");
  ASSERT_EQ(target.code, 0) << target.err;
  EXPECT_FALSE(std::regex_search(target.out, std::regex("[0-9]e\\+0[0-4]"))) << target.out;
  const Result scaling = Run("analyze scaling --sweep synthetic --format csv");
  ASSERT_EQ(scaling.code, 0) << scaling.err;
  EXPECT_EQ(scaling.out.find('%'), std::string::npos) << scaling.out;
  EXPECT_NE(scaling.out.find("efficiency_percent"), std::string::npos) << scaling.out;
  // The table still shows 4 significant digits, percents with their sign.
  const Result table = Run("analyze scaling --sweep synthetic");
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find('%'), std::string::npos) << table.out;
}

}  // namespace
}  // namespace batchlab
