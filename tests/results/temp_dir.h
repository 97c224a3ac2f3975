// Test files for the results tests: the shared TempDir (tests/support/temp_dir.h) and the
// whole-file read/write helpers (tests/support/file_text.h). Every results test works on real
// SQLite files in a TempDir.
#ifndef BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_
#define BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_

#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab::results::testing {

using TempDir = ::batchlab::testing::TempDir;

using ::batchlab::testing::ReadFileText;
using ::batchlab::testing::WriteFileText;

}  // namespace batchlab::results::testing

#endif  // BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_
