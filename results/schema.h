// The versioned schema of the batchlab results database, and opening the file for either role.
//
// The schema version lives in `PRAGMA user_version`; a batchlab database is marked with
// `PRAGMA application_id` = kApplicationId. Every released version's DDL is kept in code: the
// v1 DDL plus one frozen forward migration per step (v -> v+1); SchemaDdl(v) is v1 followed by
// the steps up to v. Tests build a database of any earlier version, fill it, and check that
// migrating it keeps its data and yields the current schema.
//
// Writers (the Store) call OpenForWriting: it creates or migrates the schema in one transaction,
// refuses a database from a newer batchlab or a file that is not a batchlab database without
// touching it, then switches to WAL. Readers (CLI, analysis) call OpenReadOnly:
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly("batchlab.db"));
//   BATCHLAB_ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT * FROM run_summary WHERE sweep = ?"));
//
// Tables and views are documented in docs/schema.md.
#ifndef BATCHLAB_RESULTS_SCHEMA_H_
#define BATCHLAB_RESULTS_SCHEMA_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "results/database.h"

namespace batchlab::results {

inline constexpr int kSchemaVersion = 7;
inline constexpr int32_t kApplicationId = 0x424C4142;  // "BLAB"

// The complete DDL that creates an empty database of `version` (1..kSchemaVersion), without the
// PRAGMAs. Frozen once released: change the schema only by adding a version and a migration.
const char* SchemaDdl(int version);

// Builds an empty database of `version` on `db` (DDL + application_id + user_version).
// Used for new files (version = kSchemaVersion) and by tests to make old databases.
Status CreateSchema(Database& db, int version);

// Applies the forward migrations from `from` up to kSchemaVersion in one transaction.
Status MigrateSchema(Database& db, int from);

// What OpenForWriting found in the file before it touched it.
struct SchemaOpenInfo {
  int found_version = 0;  // 0: a new, empty file
  int version = 0;        // after open: kSchemaVersion
};

// Opens `path` read-write, creating or migrating the schema; WAL, synchronous=NORMAL,
// foreign keys on. Refuses (kFailedPrecondition, file unchanged) a newer schema or a file that
// is not a batchlab database.
StatusOr<std::unique_ptr<Database>> OpenForWriting(const std::string& path,
                                                   SchemaOpenInfo* info = nullptr);

// Opens `path` with SQLITE_OPEN_READONLY after checking it is a batchlab database of the
// current schema version (an older one must be migrated first: `batchlab results migrate`).
StatusOr<std::unique_ptr<Database>> OpenReadOnly(const std::string& path);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_SCHEMA_H_
