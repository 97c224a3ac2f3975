// The orchestrator tests' name for the shared TempDir (tests/support/temp_dir.h).
//
//   TempDir dir;
//   std::string db = dir.path() + "/batchlab.db";
#ifndef BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_
#define BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_

#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator::testing {

using TempDir = ::batchlab::testing::TempDir;

}  // namespace batchlab::orchestrator::testing

#endif  // BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_
