// The training loss of every step of every run in a results database, to compare two sweeps of
// the same runs (warm and cold workers, packed and unpacked Slurm jobs) step by step.
//
//   EXPECT_EQ(StoredLosses(dir + "/fresh.db"), StoredLosses(dir + "/reuse.db"));
#ifndef BATCHLAB_TESTS_SUPPORT_STORED_LOSSES_H_
#define BATCHLAB_TESTS_SUPPORT_STORED_LOSSES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "results/database.h"

namespace batchlab::testing {

// (run id, step) -> loss.
inline std::map<std::pair<std::string, int64_t>, double> StoredLosses(const std::string& db) {
  std::map<std::pair<std::string, int64_t>, double> out;
  auto rdb = results::OpenReadOnly(db);
  EXPECT_TRUE(rdb.ok());
  if (!rdb.ok()) return out;
  auto st = (*rdb)->Prepare(
      "SELECT r.id, m.step, m.value FROM metrics m JOIN runs r ON r.run_key = m.run_key "
      "JOIN metric_names n ON n.id = m.name_id WHERE n.name = 'loss'");
  EXPECT_TRUE(st.ok());
  while (st.ok()) {
    auto row = st->Step();
    if (!row.ok() || !*row) break;
    out[std::make_pair(std::string(st->ColumnText(0)), int64_t{st->ColumnInt(1)})] =
        st->ColumnDouble(2);
  }
  return out;
}

}  // namespace batchlab::testing

#endif  // BATCHLAB_TESTS_SUPPORT_STORED_LOSSES_H_
