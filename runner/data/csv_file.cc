// CSV reader for user data (see csv_file.h).
#include "runner/data/csv_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

RunnerError CsvError(const std::string& path, size_t line, const std::string& what) {
  return RunnerError(RunnerError::Kind::kData,
                     "data file \"" + path + "\" line " + std::to_string(line) + ": " + what);
}

std::vector<std::string> SplitCells(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    std::string cell =
        line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t b = cell.find_first_not_of(" \t\r\"");
    const size_t e = cell.find_last_not_of(" \t\r\"");
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cells;
}

bool ParseNumber(const std::string& cell, double& out) {
  if (cell.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(cell.c_str(), &end);
  return errno == 0 && end == cell.c_str() + cell.size() && std::isfinite(out);
}

}  // namespace

CsvTable ReadCsvFile(const std::string& path, int64_t label_column, bool classification) {
  std::ifstream in(path);
  if (!in) {
    throw RunnerError(RunnerError::Kind::kBadConfig,  // exit 2: a retry would not find it
                      "data file \"" + path + "\" cannot be opened; check data.path");
  }
  std::vector<float> features;
  std::vector<double> labels;
  size_t columns = 0, line_no = 0;
  size_t label = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> cells = SplitCells(line);
    std::vector<double> values(cells.size());
    bool numeric = true;
    for (size_t i = 0; i < cells.size() && numeric; ++i) numeric = ParseNumber(cells[i], values[i]);
    if (columns == 0) {
      if (cells.size() < 2) throw CsvError(path, line_no, "needs at least 2 columns");
      columns = cells.size();
      const int64_t want = label_column < 0 ? static_cast<int64_t>(columns) - 1 : label_column;
      if (want >= static_cast<int64_t>(columns)) {
        throw CsvError(path, line_no,
                       "data.label_column " + std::to_string(label_column) +
                           " is past the last column (" + std::to_string(columns - 1) + ")");
      }
      label = static_cast<size_t>(want);
      if (!numeric) continue;  // header
    }
    if (cells.size() != columns) {
      throw CsvError(
          path, line_no,
          "has " + std::to_string(cells.size()) + " columns, expected " + std::to_string(columns));
    }
    for (size_t i = 0; i < cells.size(); ++i) {
      if (!ParseNumber(cells[i], values[i])) {
        throw CsvError(
            path, line_no,
            "column " + std::to_string(i) + " (\"" + cells[i] + "\") is not a finite number");
      }
    }
    const double y = values[label];
    if (classification && (y < 0 || y != std::floor(y) || y > 1e6)) {
      throw CsvError(path, line_no,
                     "label \"" + cells[label] +
                         "\" is not a class index (0, 1, 2, ...); for real-valued "
                         "labels set data.task to \"regression\"");
    }
    labels.push_back(y);
    for (size_t i = 0; i < values.size(); ++i) {
      if (i != label) features.push_back(static_cast<float>(values[i]));
    }
  }
  if (labels.empty()) throw CsvError(path, line_no, "no data rows");
  const auto n = static_cast<int64_t>(labels.size());
  CsvTable t;
  t.x = torch::from_blob(features.data(), {n, static_cast<int64_t>(columns) - 1}, torch::kFloat32)
            .clone();
  torch::Tensor y = torch::from_blob(labels.data(), {n}, torch::kFloat64);
  t.y = classification ? y.to(torch::kInt64) : y.to(torch::kFloat32).unsqueeze(1).contiguous();
  return t;
}

}  // namespace batchlab::runner
