// Reads a user's tabular data from a CSV file: one row per sample, numeric features and one
// label column. A first row that is not all numbers is taken as a header and skipped.
//
//   CsvTable t = ReadCsvFile("train.csv", /*label_column=*/-1, /*classification=*/true);
//   t.x;   // [N, F] float32 features
//   t.y;   // [N] int64 class labels (classification) or [N, 1] float32 targets (regression)
//
// Throws RunnerError kData naming the file, line and column of the first bad cell.
#ifndef BATCHLAB_RUNNER_DATA_CSV_FILE_H_
#define BATCHLAB_RUNNER_DATA_CSV_FILE_H_

#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace batchlab::runner {

struct CsvTable {
  torch::Tensor x, y;
};

// `label_column` counts from 0; -1 means the last column.
CsvTable ReadCsvFile(const std::string& path, int64_t label_column, bool classification);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_CSV_FILE_H_
