// The report of the synthetic sweep: files written, numbers consistent with the analyses, the
// database untouched, and text that cannot break the HTML or CSV.
#include "analysis/report/report.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "analysis/sections/study.h"
#include "analysis/data/sweep_data.h"
#include "tests/support/synthetic_sweep.h"
#include "tests/support/file_text.h"

namespace batchlab::analysis {
namespace {

using ::batchlab::testing::ReadFileText;

using testing::TempDir;

// A language model's sweep (every run stored tokens_per_step): B_crit, E_min and B_simple are also
// given in tokens (x tokens per sequence = tokens_per_step / batch_size); other sweeps say nothing.
TEST(ReportTest, LanguageModelSweepsAlsoReportTokens) {
  TempDir dir;
  const std::string db = dir.File("batchlab.db");
  testing::WriteSyntheticSweep(db, dir.path(), "lm", /*tokens_per_sequence=*/64);
  testing::WriteSyntheticSweep(dir.File("plain.db"), dir.path(), "plain");
  StudyOptions opt;
  opt.resamples = 200;
  StatusOr<SweepData> lm = LoadSweep(db, "lm", LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().message();
  EXPECT_EQ(TokensPerSequence(*lm), 64.0);
  StatusOr<Study> study = RunStudy(*lm, opt);
  ASSERT_TRUE(study.ok()) << study.status().message();
  ASSERT_TRUE(study->crit.status.ok()) << study->crit.status.message();
  const CritFit& f = study->crit.fit;
  std::string all;
  for (const std::string& line : Summary(*study)) all += line + "\n";
  EXPECT_NE(all.find("In tokens (64 per sequence): B_crit = " + FormatNumber(64 * f.b_crit.value) +
                     " tokens per step"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("E_min = " + FormatNumber(64 * f.e_min.value) + " tokens."), std::string::npos)
      << all;
  const nlohmann::json j = CritJson(study->crit);
  EXPECT_EQ(j["tokens_per_sequence"], 64.0);
  EXPECT_DOUBLE_EQ(j["b_crit_tokens"]["value"].get<double>(), 64 * f.b_crit.value);
  EXPECT_DOUBLE_EQ(j["e_min_tokens"]["value"].get<double>(), 64 * f.e_min.value);
  // The fit's table (analyze crit, critical_batch.csv) has the rows in tokens too.
  const Table fit = CritTables(study->crit).front();
  bool tokens_row = false;
  for (const auto& row : fit.rows) {
    if (row[0] != "B_crit (tokens per step)") continue;
    tokens_row = true;
    // Exact in the cell (the CSV keeps it; the text views round it).
    EXPECT_EQ(row[1], results::ExactNumber(64 * f.b_crit.value));
    EXPECT_EQ(row[2], results::ExactNumber(64 * f.b_crit.low));
    EXPECT_EQ(row[3], results::ExactNumber(64 * f.b_crit.high));
  }
  EXPECT_TRUE(tokens_row);

  // One run without the fact: no tokens anywhere (units are never mixed).
  SweepData mixed = std::move(*lm);
  mixed.runs.front().tokens_per_step = 0;
  EXPECT_FALSE(TokensPerSequence(mixed));
  StatusOr<SweepData> plain = LoadSweep(dir.File("plain.db"), "plain", LoadOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_FALSE(TokensPerSequence(*plain));
  StatusOr<Study> plain_study = RunStudy(*plain, opt);
  ASSERT_TRUE(plain_study.ok());
  for (const std::string& line : Summary(*plain_study)) {
    EXPECT_EQ(line.find("tokens"), std::string::npos) << line;
  }
  EXPECT_FALSE(CritJson(plain_study->crit).contains("b_crit_tokens"));
  const std::vector<Table> plain_tables = CritTables(plain_study->crit);
  for (const auto& row : plain_tables.front().rows) {
    EXPECT_EQ(row[0].find("tokens"), std::string::npos) << row[0];
  }
}

TEST(ReportTest, WritesHtmlMarkdownAndCsvWithoutTouchingTheDatabase) {
  TempDir dir;
  const std::string db = dir.File("batchlab.db");
  testing::WriteSyntheticSweep(db, dir.path());
  const auto before = std::filesystem::last_write_time(db);
  const auto size = std::filesystem::file_size(db);

  StatusOr<SweepData> sweep = LoadSweep(db, "synthetic", LoadOptions{});
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  StudyOptions opt;
  opt.resamples = 200;
  StatusOr<Study> study = RunStudy(*sweep, opt);
  ASSERT_TRUE(study.ok()) << study.status().message();
  const std::string out = dir.File("report");
  StatusOr<std::vector<std::string>> files = WriteReport(*study, out);
  ASSERT_TRUE(files.ok()) << files.status().message();

  for (const char* f : {"report.html", "report.md", "steps_to_target.csv", "critical_batch.csv",
                        "gns.csv", "pareto.csv", "scaling_strong.csv", "projection.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / f)) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "report.html.tmp"));
  const std::string md = ReadFileText(out + "/report.md");
  EXPECT_NE(md.find("# batchlab report: sweep synthetic (version 1)"), std::string::npos);
  EXPECT_NE(md.find("Critical batch size B_crit = " + FormatNumber(study->crit.fit.b_crit.value)),
            std::string::npos);
  EXPECT_NE(md.find("1 diverged, 1 pending, 28 target_reached"), std::string::npos);
  const std::string html = ReadFileText(out + "/report.html");
  // Charts as Vega-Lite specs with the library inlined (tests/analysis/report/report_charts_test.cc and
  // the browser test check what they draw).
  EXPECT_NE(html.find("id=\"batchlab-charts\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-pareto\""), std::string::npos);
  EXPECT_NE(html.find("vega-embed.min.js"), std::string::npos);
  EXPECT_NE(html.find("PROJECTION (a model, not a measurement)"), std::string::npos);
  EXPECT_EQ(html.find("-nan"), std::string::npos);

  // The CSV of the per-batch table: header + one row per batch size.
  const std::string csv = ReadFileText(out + "/steps_to_target.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 5);
  EXPECT_EQ(csv.rfind("batch_size,runs,reached,", 0), 0u);

  EXPECT_EQ(std::filesystem::file_size(db), size);
  EXPECT_EQ(std::filesystem::last_write_time(db), before);
}

TEST(ReportTest, NoTargetAnywhereStillReportsTheRestAndSaysWhy) {
  SweepData sweep;
  sweep.name = "s";
  RunData r;
  r.id = "r1";
  r.batch_size = 64;
  r.state = "completed";
  r.metrics["step_seconds"] = {{1, 2, 3, 4, 5, 6, 7}, {1, 1, 1, 1, 1, 1, 1}};
  sweep.runs.push_back(r);
  StatusOr<Study> study = RunStudy(sweep, StudyOptions{});
  ASSERT_TRUE(study.ok()) << study.status().message();
  EXPECT_FALSE(study->target_status.ok());
  EXPECT_EQ(study->scaling.timings.size(), 1u);
  const std::string md = RenderMarkdown(*study);
  EXPECT_NE(md.find("no target"), std::string::npos);
  EXPECT_NE(md.find("--target"), std::string::npos);
  EXPECT_NE(md.find("Not computed"), std::string::npos);

  // A malformed --target is the user's error.
  StudyOptions bad;
  bad.target = "accuracy";
  StatusOr<Study> refused = RunStudy(sweep, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

TEST(TableTest, EscapesHtmlAndCsv) {
  Table t{"t", "a <b> & \"c\"", {"x", "y"}, {{"1,2", "say \"hi\""}, {"<script>", "|"}}, {"n"}};
  const std::string html = t.ToHtml();
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(t.ToCsv(), "x,y\n\"1,2\",\"say \"\"hi\"\"\"\n<script>,|\n");
  EXPECT_NE(t.ToMarkdown().find("\\|"), std::string::npos);
  EXPECT_NE(t.ToText().find("<script>  |"), std::string::npos);
}

TEST(TableTest, FormatsNumbers) {
  EXPECT_EQ(FormatNumber(912.5), "912.5");
  EXPECT_EQ(FormatNumber(125000), "1.25e+05");
  EXPECT_EQ(FormatNumber(1.0 / 0.0), "inf");
  EXPECT_EQ(FormatNumber(std::nan("")), "nan");
}

}  // namespace
}  // namespace batchlab::analysis
