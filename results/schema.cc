// Schema DDL of every version, forward migrations, and the checks done on open; see schema.h.
#include "results/schema.h"

#include <fmt/core.h>

namespace batchlab::results {
namespace {

// ---- v1: sweeps, runs with typed parameters, narrow metrics, events. ----
constexpr const char* kDdlV1 = R"sql(
CREATE TABLE sweeps(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  spec_json TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  created_at REAL NOT NULL,
  UNIQUE(name, version));
CREATE TABLE runs(
  run_key INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
  ordinal INTEGER NOT NULL,
  config_json TEXT NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  host TEXT NOT NULL DEFAULT '',
  started_at REAL,
  ended_at REAL,
  batch_size INTEGER,
  nodes INTEGER,
  ranks_per_node INTEGER,
  world_size INTEGER,
  local_batch_size INTEGER,
  accumulation INTEGER,
  optimizer TEXT,
  lr_rule TEXT,
  lr_base REAL,
  lr_base_batch_size INTEGER,
  seed INTEGER,
  model TEXT,
  dataset TEXT,
  precision TEXT,
  comm_backend TEXT);
CREATE INDEX runs_by_sweep ON runs(sweep_id, ordinal);
CREATE TABLE metric_names(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE);
CREATE TABLE metrics(
  run_key INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  step INTEGER,
  value REAL,
  PRIMARY KEY(run_key, attempt, seq, name_id)) WITHOUT ROWID;
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  run_key INTEGER REFERENCES runs(run_key),
  attempt INTEGER,
  time REAL NOT NULL,
  kind TEXT NOT NULL,
  from_state TEXT,
  to_state TEXT,
  message TEXT NOT NULL DEFAULT '');
CREATE INDEX events_by_run ON events(run_key, id);
)sql";

// ---- v2: run outcome columns (from the runner's `end` line), ingest cursors, run_params. ----
constexpr const char* kV1ToV2 = R"sql(
ALTER TABLE runs ADD COLUMN outcome TEXT;
ALTER TABLE runs ADD COLUMN steps INTEGER;
ALTER TABLE runs ADD COLUMN samples INTEGER;
ALTER TABLE runs ADD COLUMN seconds REAL;
ALTER TABLE runs ADD COLUMN target_step INTEGER;
ALTER TABLE runs ADD COLUMN target_samples INTEGER;
ALTER TABLE runs ADD COLUMN target_seconds REAL;
ALTER TABLE runs ADD COLUMN final_test_loss REAL;
ALTER TABLE runs ADD COLUMN final_test_accuracy REAL;
CREATE TABLE run_params(
  run_key INTEGER NOT NULL REFERENCES runs(run_key),
  name TEXT NOT NULL,
  value ANY,
  PRIMARY KEY(run_key, name)) WITHOUT ROWID;
CREATE TABLE ingest_cursors(
  run_key INTEGER NOT NULL REFERENCES runs(run_key),
  attempt INTEGER NOT NULL,
  byte_offset INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  saw_end INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_key, attempt)) WITHOUT ROWID;
)sql";

// ---- v3: the views users reach for first, and indexes for filtering runs. ----
constexpr const char* kV2ToV3 = R"sql(
CREATE INDEX runs_by_batch ON runs(sweep_id, batch_size);
CREATE INDEX runs_by_state ON runs(state);
CREATE VIEW run_summary AS
SELECT s.name AS sweep, s.version AS sweep_version, r.id AS run_id, r.ordinal AS ordinal,
       r.state AS state, r.attempt AS attempt, r.exit_code AS exit_code,
       r.batch_size AS batch_size, r.nodes AS nodes, r.ranks_per_node AS ranks_per_node,
       r.world_size AS world_size, r.local_batch_size AS local_batch_size,
       r.accumulation AS accumulation, r.optimizer AS optimizer, r.lr_rule AS lr_rule,
       r.lr_base AS lr_base, r.lr_base_batch_size AS lr_base_batch_size, r.seed AS seed,
       r.model AS model, r.dataset AS dataset, r.precision AS precision,
       r.comm_backend AS comm_backend, r.outcome AS outcome, r.steps AS steps,
       r.samples AS samples, r.seconds AS seconds, r.target_step AS target_step,
       r.target_samples AS target_samples, r.target_seconds AS target_seconds,
       r.final_test_loss AS final_test_loss, r.final_test_accuracy AS final_test_accuracy,
       r.started_at AS started_at, r.ended_at AS ended_at, r.host AS host,
       r.sweep_id AS sweep_id, r.run_key AS run_key
FROM runs r JOIN sweeps s ON s.id = r.sweep_id;
CREATE VIEW run_metrics AS
SELECT r.id AS run_id, m.attempt AS attempt, m.seq AS seq, m.step AS step, n.name AS name,
       m.value AS value
FROM runs r
JOIN metrics m ON m.run_key = r.run_key AND m.attempt = r.attempt
JOIN metric_names n ON n.id = m.name_id;
CREATE VIEW best_run_per_batch AS
SELECT sweep, sweep_version, sweep_id, batch_size, run_id, target_step, target_samples,
       target_seconds, lr_rule, lr_base, optimizer, nodes, world_size, runs_reached
FROM (SELECT s.*,
             ROW_NUMBER() OVER (PARTITION BY sweep_id, batch_size
                                ORDER BY target_step, target_seconds, run_id) AS rank_in_batch,
             COUNT(*) OVER (PARTITION BY sweep_id, batch_size) AS runs_reached
      FROM run_summary s WHERE s.target_step IS NOT NULL)
WHERE rank_in_batch = 1;
)sql";

// ---- v4: best_run_per_batch ranks the runs that reached their target straight from a partial
// covering index (already in partition order: no table access, no sort). ----
constexpr const char* kV3ToV4 = R"sql(
CREATE INDEX runs_reached ON runs(sweep_id, batch_size, target_step, target_seconds, id,
  target_samples, lr_rule, lr_base, optimizer, nodes, world_size)
  WHERE target_step IS NOT NULL;
DROP VIEW best_run_per_batch;
CREATE VIEW best_run_per_batch AS
SELECT s.name AS sweep, s.version AS sweep_version, b.sweep_id AS sweep_id,
       b.batch_size AS batch_size, b.run_id AS run_id, b.target_step AS target_step,
       b.target_samples AS target_samples, b.target_seconds AS target_seconds,
       b.lr_rule AS lr_rule, b.lr_base AS lr_base, b.optimizer AS optimizer, b.nodes AS nodes,
       b.world_size AS world_size, b.runs_reached AS runs_reached
FROM (SELECT r.sweep_id, r.batch_size, r.id AS run_id, r.target_step, r.target_samples,
             r.target_seconds, r.lr_rule, r.lr_base, r.optimizer, r.nodes, r.world_size,
             ROW_NUMBER() OVER (PARTITION BY r.sweep_id, r.batch_size
                                ORDER BY r.target_step, r.target_seconds, r.id) AS rank_in_batch,
             COUNT(*) OVER (PARTITION BY r.sweep_id, r.batch_size) AS runs_reached
      FROM runs r WHERE r.target_step IS NOT NULL) b
JOIN sweeps s ON s.id = b.sweep_id
WHERE b.rank_in_batch = 1;
)sql";

// ---- v5: the database's identity (attempt folders carry it), every attempt's folder, and a
// count of metrics-file anomalies per attempt (events beyond the first ones are only counted). ----
constexpr const char* kV4ToV5 = R"sql(
CREATE TABLE database_info(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO database_info(key, value) VALUES('id', lower(hex(randomblob(8))));
CREATE TABLE attempts(
  run_key INTEGER NOT NULL REFERENCES runs(run_key),
  attempt INTEGER NOT NULL,
  dir TEXT NOT NULL,
  started_at REAL NOT NULL,
  PRIMARY KEY(run_key, attempt)) WITHOUT ROWID;
ALTER TABLE ingest_cursors ADD COLUMN anomalies INTEGER NOT NULL DEFAULT 0;
)sql";

// ---- v6: the facts of the runner's `start` line (model size, tokens and FLOPs per step), stored
// with the run so the analysis never re-derives them from the config; run_summary shows them. ----
constexpr const char* kV5ToV6 = R"sql(
ALTER TABLE runs ADD COLUMN parameters INTEGER;
ALTER TABLE runs ADD COLUMN tokens_per_step INTEGER;
ALTER TABLE runs ADD COLUMN flops_per_step REAL;
DROP VIEW run_summary;
CREATE VIEW run_summary AS
SELECT s.name AS sweep, s.version AS sweep_version, r.id AS run_id, r.ordinal AS ordinal,
       r.state AS state, r.attempt AS attempt, r.exit_code AS exit_code,
       r.batch_size AS batch_size, r.nodes AS nodes, r.ranks_per_node AS ranks_per_node,
       r.world_size AS world_size, r.local_batch_size AS local_batch_size,
       r.accumulation AS accumulation, r.optimizer AS optimizer, r.lr_rule AS lr_rule,
       r.lr_base AS lr_base, r.lr_base_batch_size AS lr_base_batch_size, r.seed AS seed,
       r.model AS model, r.dataset AS dataset, r.precision AS precision,
       r.comm_backend AS comm_backend, r.parameters AS parameters,
       r.tokens_per_step AS tokens_per_step, r.flops_per_step AS flops_per_step,
       r.outcome AS outcome, r.steps AS steps,
       r.samples AS samples, r.seconds AS seconds, r.target_step AS target_step,
       r.target_samples AS target_samples, r.target_seconds AS target_seconds,
       r.final_test_loss AS final_test_loss, r.final_test_accuracy AS final_test_accuracy,
       r.started_at AS started_at, r.ended_at AS ended_at, r.host AS host,
       r.sweep_id AS sweep_id, r.run_key AS run_key
FROM runs r JOIN sweeps s ON s.id = r.sweep_id;
)sql";

// ---- v7: the rank count each attempt ran with (slurm.elastic: an attempt may get fewer nodes)
// and the checkpoint it resumed, so the analysis counts each step's rank-seconds at the K that
// trained it. ----
constexpr const char* kV6ToV7 = R"sql(
ALTER TABLE attempts ADD COLUMN world_size INTEGER;
ALTER TABLE attempts ADD COLUMN resumed_from INTEGER;
ALTER TABLE attempts ADD COLUMN resumed_step INTEGER;
)sql";

// kMigrations[v]: v -> v+1.
const char* const kMigrations[] = {nullptr, kV1ToV2, kV2ToV3, kV3ToV4, kV4ToV5, kV5ToV6, kV6ToV7};

Status ApplyMigrations(Database& db, int from, int to) {
  for (int v = from; v < to; ++v) {
    BATCHLAB_RETURN_IF_ERROR(
        db.Exec(kMigrations[v]).WithContext(fmt::format("migrating schema v{} to v{}", v, v + 1)));
  }
  return OkStatus();
}

Status SetVersionPragmas(Database& db, int version) {
  BATCHLAB_RETURN_IF_ERROR(db.Exec(fmt::format("PRAGMA application_id = {}", kApplicationId)));
  return db.Exec(fmt::format("PRAGMA user_version = {}", version));
}

// What is in the file, read without changing it.
struct FileIdentity {
  int64_t application_id = 0;
  int64_t user_version = 0;
  int64_t objects = 0;  // entries in sqlite_schema
};

StatusOr<FileIdentity> Identify(Database& db) {
  FileIdentity id;
  auto objects = db.QueryInt("SELECT count(*) FROM sqlite_schema");
  if (!objects.ok()) {
    if (objects.status().code() == StatusCode::kFailedPrecondition) {
      return FailedPreconditionError(fmt::format(
          "{} is not a batchlab results database: it is not an SQLite database or it is corrupt "
          "({}); pass another --db",
          db.path(), objects.status().message()));
    }
    return objects.status();
  }
  id.objects = *objects;
  BATCHLAB_ASSIGN_OR_RETURN(id.application_id, db.QueryInt("PRAGMA application_id"));
  BATCHLAB_ASSIGN_OR_RETURN(id.user_version, db.QueryInt("PRAGMA user_version"));
  return id;
}

Status CheckIdentity(const Database& db, const FileIdentity& id) {
  if (id.application_id != kApplicationId && (id.application_id != 0 || id.objects > 0)) {
    return FailedPreconditionError(fmt::format(
        "{} is an SQLite database but not a batchlab results database (application_id {}, {} "
        "schema objects); pass another --db",
        db.path(), id.application_id, id.objects));
  }
  if (id.user_version > kSchemaVersion) {
    return FailedPreconditionError(fmt::format(
        "{} was written by a newer batchlab (schema v{}; this batchlab knows up to v{}); it was "
        "left unchanged: upgrade batchlab or pass another --db",
        db.path(), id.user_version, kSchemaVersion));
  }
  return OkStatus();
}

}  // namespace

const char* SchemaDdl(int version) {
  // Full DDL of each released version, kept verbatim so old databases can be rebuilt.
  static const std::string v1 = kDdlV1;
  static const std::string v2 = v1 + kV1ToV2;
  static const std::string v3 = v2 + kV2ToV3;
  static const std::string v4 = v3 + kV3ToV4;
  static const std::string v5 = v4 + kV4ToV5;
  static const std::string v6 = v5 + kV5ToV6;
  static const std::string v7 = v6 + kV6ToV7;
  switch (version) {
    case 1:
      return v1.c_str();
    case 2:
      return v2.c_str();
    case 3:
      return v3.c_str();
    case 4:
      return v4.c_str();
    case 5:
      return v5.c_str();
    case 6:
      return v6.c_str();
    case 7:
      return v7.c_str();
    default:
      return nullptr;
  }
}

Status CreateSchema(Database& db, int version) {
  const char* ddl = SchemaDdl(version);
  if (ddl == nullptr) return InvalidArgumentError(fmt::format("no schema version {}", version));
  BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  BATCHLAB_RETURN_IF_ERROR(db.Exec(ddl).WithContext(fmt::format("creating schema v{}", version)));
  BATCHLAB_RETURN_IF_ERROR(SetVersionPragmas(db, version));
  return tx.Commit();
}

Status MigrateSchema(Database& db, int from) {
  if (from < 1 || from > kSchemaVersion) {
    return InvalidArgumentError(fmt::format("cannot migrate from schema version {}", from));
  }
  if (from == kSchemaVersion) return OkStatus();
  BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  BATCHLAB_RETURN_IF_ERROR(ApplyMigrations(db, from, kSchemaVersion));
  BATCHLAB_RETURN_IF_ERROR(SetVersionPragmas(db, kSchemaVersion));
  return tx.Commit();
}

StatusOr<std::unique_ptr<Database>> OpenForWriting(const std::string& path, SchemaOpenInfo* info) {
  BATCHLAB_ASSIGN_OR_RETURN(auto db, Database::Open(path, Database::Mode::kReadWrite));
  BATCHLAB_ASSIGN_OR_RETURN(FileIdentity id, Identify(*db));
  BATCHLAB_RETURN_IF_ERROR(CheckIdentity(*db, id));
  // Nothing was written before this point: a refused file is left exactly as it was.
  BATCHLAB_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode = WAL"));
  BATCHLAB_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON"));
  if (id.application_id == 0 && id.objects == 0) {
    BATCHLAB_RETURN_IF_ERROR(CreateSchema(*db, kSchemaVersion));
  } else if (id.user_version < kSchemaVersion) {
    BATCHLAB_RETURN_IF_ERROR(MigrateSchema(*db, static_cast<int>(id.user_version)));
  }
  if (info != nullptr) {
    info->found_version = static_cast<int>(id.objects == 0 ? 0 : id.user_version);
    info->version = kSchemaVersion;
  }
  return db;
}

StatusOr<std::unique_ptr<Database>> OpenReadOnly(const std::string& path) {
  BATCHLAB_ASSIGN_OR_RETURN(auto db, Database::Open(path, Database::Mode::kReadOnly));
  BATCHLAB_ASSIGN_OR_RETURN(FileIdentity id, Identify(*db));
  BATCHLAB_RETURN_IF_ERROR(CheckIdentity(*db, id));
  if (id.objects == 0) {
    return NotFoundError(fmt::format(
        "{} is empty: no batchlab results yet (run `batchlab sweep run SPEC` first)", path));
  }
  if (id.user_version < kSchemaVersion) {
    return FailedPreconditionError(fmt::format(
        "{} has schema v{}, older than this batchlab's v{}; migrate it once with `batchlab --db "
        "{} results migrate`",
        path, id.user_version, kSchemaVersion, path));
  }
  // Readers scan whole sweeps: map the file (no copy per page read) and cache 64 MiB of pages.
  BATCHLAB_RETURN_IF_ERROR(db->Exec("PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536"));
  return db;
}

}  // namespace batchlab::results
