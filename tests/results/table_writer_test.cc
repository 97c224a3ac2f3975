// The one table/CSV/JSON writer of the CLI on rows held as text (the analysis tables use it).
#include "results/table_writer.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace batchlab::results {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(TableWriterTest, NumbersAreRightAlignedWithOneStylePerColumn) {
  const std::string t =
      FormatRows({"run", "value", "steps"}, {{"a", "0.0013", "12"}, {"bb", "0.0008986", "1200"}},
                 OutputFormat::kTable);
  const std::vector<std::string> lines = Lines(t);
  ASSERT_EQ(lines.size(), 4u) << t;
  // One column holding 1.3e-3 and 8.986e-4: both scientific with 4 significant digits.
  EXPECT_NE(lines[2].find("1.300e-03"), std::string::npos) << t;
  EXPECT_NE(lines[3].find("8.986e-04"), std::string::npos) << t;
  // Right-aligned: every line ends at the same column, the integers flush right.
  EXPECT_EQ(lines[2].size(), lines[3].size()) << t;
  EXPECT_EQ(lines[2].substr(lines[2].size() - 4), "  12") << t;
  EXPECT_EQ(lines[0].substr(0, 3), "run");
}

TEST(TableWriterTest, FixedStyleKeepsFourSignificantDigits) {
  const std::string t =
      FormatRows({"x"}, {{"0.5"}, {"912.5"}, {"0.00125"}, {"inf"}}, OutputFormat::kTable);
  const std::vector<std::string> lines = Lines(t);
  EXPECT_EQ(lines[2], "  0.5000");  // width of "0.001250"
  EXPECT_EQ(lines[3], "   912.5");
  EXPECT_EQ(lines[4], "0.001250");
  // A value that needs it makes the whole column scientific; zero stays "0".
  const std::vector<std::string> big =
      Lines(FormatRows({"x"}, {{"123456789.0"}, {"0.0"}}, OutputFormat::kTable));
  EXPECT_EQ(big[2], "1.235e+08");
  EXPECT_EQ(big[3], "        0");
}

TEST(TableWriterTest, AColumnOfDifferencesIsFixedAtTheDecimalsOfItsLargest) {
  // A loss gap near zero beside larger gaps of both signs: fixed at the resolution that gives
  // the largest 4 significant digits, never e-notation ("4.789e-04" was the cell).
  const std::vector<std::string> lines = Lines(FormatRows(
      {"gap"}, {{"0"}, {"0.0004789"}, {"-0.04303"}, {"0.01424"}}, OutputFormat::kTable));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[2], "       0");
  EXPECT_EQ(lines[3], " 0.00048");
  EXPECT_EQ(lines[4], "-0.04303");
  EXPECT_EQ(lines[5], " 0.01424");
  // One sign: a value that needs it still makes the column scientific.
  EXPECT_EQ(Lines(FormatRows({"gap"}, {{"0"}, {"0.0004789"}, {"0.04303"}}, OutputFormat::kTable))[3],
            "4.789e-04");
}

TEST(TableWriterTest, ProseNumberHasThreeDigitsAndNoExponentBetweenAThousandthAndAMillion) {
  // "1e+02% at worst" and "RMS relative residual 11.590010262562622%" were sentences.
  EXPECT_EQ(ProseNumber(100), "100");
  EXPECT_EQ(ProseNumber(11.590010262562622), "11.6");
  EXPECT_EQ(ProseNumber(51.9278814984164), "51.9");
  EXPECT_EQ(ProseNumber(27985.3), "28000");
  EXPECT_EQ(ProseNumber(125000), "125000");
  EXPECT_EQ(ProseNumber(999.7), "1000");
  EXPECT_EQ(ProseNumber(0.0059712), "0.00597");
  EXPECT_EQ(ProseNumber(-0.85), "-0.85");
  EXPECT_EQ(ProseNumber(0), "0");
  EXPECT_EQ(ProseNumber(1.25e15), "1.25e+15");
  EXPECT_EQ(ProseNumber(2e-5), "2e-05");
}

TEST(TableWriterTest, FormatNumberIsTheShortestFormWithSignificantDigits) {
  EXPECT_EQ(FormatNumber(912.5), "912.5");
  EXPECT_EQ(FormatNumber(0.85, 3), "0.85");
  EXPECT_EQ(FormatNumber(125000), "1.25e+05");
  EXPECT_EQ(FormatNumber(2.0 / 3.0), "0.6667");
  EXPECT_EQ(FormatNumber(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FormatNumber(std::nan("")), "nan");
  // Its cells read in the table's one column style: shortest text, one aligned column.
  const std::vector<std::string> lines =
      Lines(FormatRows({"x"}, {{FormatNumber(0.5)}, {FormatNumber(912.5)}}, OutputFormat::kTable));
  EXPECT_EQ(lines[2], "0.5000");
  EXPECT_EQ(lines[3], " 912.5");
}

TEST(TableWriterTest, HexIdsAndPercentagesAreNotReformatted) {
  const std::string t =
      FormatRows({"id", "eff"}, {{"123e4567", "98.5%"}, {"00ab", "7%"}}, OutputFormat::kTable);
  EXPECT_NE(t.find("123e4567"), std::string::npos) << t;
  EXPECT_NE(t.find("98.5%"), std::string::npos) << t;
  EXPECT_NE(t.find("   7%"), std::string::npos) << t;  // right-aligned
}

TEST(TableWriterTest, JsonHasNumbersNullsAndStrings) {
  const std::string j =
      FormatRows({"id", "steps", "loss", "note"}, {{"a1", "12", "0.5", ""}, {"b2", "", "inf", "x"}},
                 OutputFormat::kJson);
  const nlohmann::json v = nlohmann::json::parse(j);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]["steps"], 12);
  EXPECT_DOUBLE_EQ(v[0]["loss"].get<double>(), 0.5);
  EXPECT_TRUE(v[0]["note"].is_null());
  EXPECT_TRUE(v[1]["loss"].is_null());  // non-finite
  EXPECT_EQ(v[1]["id"], "b2");
  const std::string jl = FormatRows({"a"}, {{"1"}, {"2"}}, OutputFormat::kJsonl);
  EXPECT_EQ(jl, "{\"a\":1}\n{\"a\":2}\n");
  EXPECT_EQ(FormatRows({"a", "b"}, {{"x,y", "1"}}, OutputFormat::kCsv), "a,b\n\"x,y\",1\n");
}

TEST(TableWriterTest, CsvAndJsonKeepExactNumbersAndPercentsAsNumbers) {
  // Cells hold exact numbers; only the table rounds them. Before, the analysis stored 4
  // significant digits in the cells: CSV had 1.075e+04 for 10752 and "7.66%" as text.
  EXPECT_EQ(ExactNumber(10752.0), "10752");
  EXPECT_EQ(ExactNumber(0.1), "0.1");
  EXPECT_EQ(ExactNumber(1.2e13), "12000000000000");  // an integer, not 1.2e+13
  EXPECT_EQ(ExactNumber(-0.0), "-0");
  EXPECT_EQ(ExactNumber(1e-7), "1e-07");
  EXPECT_EQ(ExactNumber(29.0 + 1.0 / 6), "29.166666666666668");
  const std::vector<std::vector<std::string>> rows = {{"10752", ExactNumber(29.0 + 1.0 / 6), "7.66%"},
                                                      {"64", "0.5", "100%"}};
  const std::vector<std::string> columns = {"steps", "mean", "eff"};
  EXPECT_EQ(FormatRows(columns, rows, OutputFormat::kCsv),
            "steps,mean,eff_percent\n10752,29.166666666666668,7.66\n64,0.5,100\n");
  const nlohmann::json j = nlohmann::json::parse(FormatRows(columns, rows, OutputFormat::kJson));
  EXPECT_EQ(j[0]["steps"], 10752);
  EXPECT_DOUBLE_EQ(j[0]["eff_percent"].get<double>(), 7.66);
  const std::string table = FormatRows(columns, rows, OutputFormat::kTable);
  EXPECT_NE(table.find("10752   29.17  7.66%"), std::string::npos) << table;
  EXPECT_EQ(DisplayRows(columns, rows)[0][1], "29.17");
  EXPECT_EQ(DisplayRows(columns, rows)[1][2], "100%");
}

}  // namespace
}  // namespace batchlab::results
