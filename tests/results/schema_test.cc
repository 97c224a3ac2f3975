// Schema creation, forward migrations from every earlier version, and the refusals on open
// (newer schema, not a batchlab database, not an SQLite file), all on real SQLite files.
#include "results/schema.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "results/database.h"
#include "results/store.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab::results {
namespace {

using testing::ReadFileText;
using testing::TempDir;
using testing::WriteFileText;

// Every schema object (type, name) and every table's columns (name, declared type, notnull, pk):
// two databases with equal fingerprints have the same schema.
std::map<std::string, std::string> Fingerprint(Database& db) {
  std::map<std::string, std::string> out;
  auto objects = db.Prepare(
      "SELECT type, name, tbl_name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' "
      "ORDER BY name");
  EXPECT_TRUE(objects.ok()) << objects.status().message();
  std::vector<std::string> tables;
  while (*objects->Step()) {
    out[objects->ColumnText(1)] = objects->ColumnText(0) + " on " + objects->ColumnText(2);
    if (objects->ColumnText(0) != "index") tables.push_back(objects->ColumnText(1));
  }
  for (const auto& t : tables) {
    auto cols = db.Prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)");
    EXPECT_TRUE(cols.ok());
    cols->BindText(1, t);
    std::string desc;
    while (*cols->Step()) {
      desc += cols->ColumnText(0) + ":" + cols->ColumnText(1) + ":" + cols->ColumnText(2) + ":" +
              cols->ColumnText(3) + ";";
    }
    out[t + " columns"] = desc;
  }
  return out;
}

TEST(SchemaTest, NewFileGetsCurrentSchemaInWalMode) {
  TempDir dir;
  SchemaOpenInfo info;
  auto db = OpenForWriting(dir.File("new.db"), &info);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(info.found_version, 0);
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA application_id"), kApplicationId);
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->ColumnText(0), "wal");
  for (const char* name : {"sweeps", "runs", "metric_names", "metrics", "events", "run_params",
                           "ingest_cursors", "run_summary", "run_metrics", "best_run_per_batch"}) {
    auto st = (*db)->Prepare(fmt::format("SELECT count(*) FROM {}", name));
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().message();
    EXPECT_TRUE(*st->Step());
  }
}

// Builds a database at `version`, puts a sweep, a run and metric rows in it, and checks that
// opening it for writing migrates it to the current schema with its data intact.
class MigrationTest : public ::testing::TestWithParam<int> {};

TEST_P(MigrationTest, MigratesToCurrentSchemaKeepingData) {
  const int version = GetParam();
  TempDir dir;
  const std::string path = dir.File("old.db");
  {
    auto db = Database::Open(path, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(CreateSchema(**db, version).ok());
    ASSERT_TRUE((*db)
                    ->Exec(R"sql(
      INSERT INTO sweeps(id, name, version, spec_json, spec_hash, created_at)
        VALUES(1, 'old', 1, '{}', 'h', 1.0);
      INSERT INTO runs(run_key, id, sweep_id, ordinal, config_json, state, attempt, batch_size)
        VALUES(1, 'r1', 1, 0, '{"batch_size":64}', 'completed', 1, 64);
      INSERT INTO metric_names(id, name) VALUES(1, 'loss');
      INSERT INTO metrics(run_key, attempt, seq, name_id, step, value)
        VALUES(1, 1, 1, 1, 1, 2.5), (1, 1, 2, 1, 2, 2.0);
    )sql")
                    .ok());
    EXPECT_EQ(*(*db)->QueryInt("PRAGMA user_version"), version);
  }
  SchemaOpenInfo info;
  auto migrated = OpenForWriting(path, &info);
  ASSERT_TRUE(migrated.ok()) << migrated.status().message();
  EXPECT_EQ(info.found_version, version);
  EXPECT_EQ(*(*migrated)->QueryInt("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(*(*migrated)->QueryInt("SELECT count(*) FROM run_metrics WHERE run_id = 'r1'"), 2);
  EXPECT_EQ(*(*migrated)->QueryInt("SELECT batch_size FROM run_summary WHERE run_id = 'r1'"), 64);

  auto fresh = OpenForWriting(dir.File("fresh.db"));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(Fingerprint(**migrated), Fingerprint(**fresh));
  migrated->reset();

  // The migrated store works: ingest into the old run adds to its series.
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().message();
  WriteFileText(dir.File("m.jsonl"), "{\"seq\":3,\"kind\":\"step\",\"step\":3,\"loss\":1.5}\n");
  auto stats = (*store)->IngestMetrics("r1", 1, dir.File("m.jsonl"));
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->values_stored, 1);
}

INSTANTIATE_TEST_SUITE_P(EveryEarlierVersion, MigrationTest, ::testing::Range(1, kSchemaVersion));

TEST(SchemaTest, NewerSchemaIsRefusedAndLeftUnchanged) {
  TempDir dir;
  const std::string path = dir.File("future.db");
  {
    auto db = Database::Open(path, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(CreateSchema(**db, kSchemaVersion).ok());
    ASSERT_TRUE((*db)->Exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion + 1)).ok());
  }
  const std::string before = ReadFileText(path);
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("newer batchlab"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFileText(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  auto reader = OpenReadOnly(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("newer batchlab"), std::string::npos);
}

TEST(SchemaTest, TextFileIsNotADatabase) {
  TempDir dir;
  const std::string path = dir.File("notes.db");
  WriteFileText(path, std::string(4096, 'x') + "this is not an sqlite file\n");
  const std::string before = ReadFileText(path);
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("not a batchlab results database"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFileText(path), before);
  auto reader = OpenReadOnly(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kFailedPrecondition);
}

TEST(SchemaTest, CorruptDatabaseGetsAClearMessage) {
  TempDir dir;
  const std::string path = dir.File("corrupt.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
  }
  std::string bytes = ReadFileText(path);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t i = 100; i < 4000; ++i) bytes[i] = static_cast<char>(0xA5);  // schema page
  WriteFileText(path, bytes);
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("corrupt"), std::string::npos)
      << store.status().message();
  auto reader = OpenReadOnly(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("corrupt"), std::string::npos);
}

TEST(SchemaTest, ForeignSqliteDatabaseIsRefused) {
  TempDir dir;
  const std::string path = dir.File("other.db");
  {
    auto db = Database::Open(path, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE trials(id INTEGER PRIMARY KEY)").ok());
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not a batchlab results database"), std::string::npos)
      << store.status().message();
  auto db = Database::Open(path, Database::Mode::kReadOnly);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM sqlite_schema"), 1);  // nothing added
}

TEST(SchemaTest, ReaderRefusesOlderSchemaAndMissingFile) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  {
    auto db = Database::Open(path, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(CreateSchema(**db, 1).ok());
  }
  auto reader = OpenReadOnly(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("results migrate"), std::string::npos);
  auto missing = OpenReadOnly(dir.File("absent.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.File("absent.db")));
}

TEST(SchemaTest, ReadOnlyConnectionCannotChangeTheFile) {
  TempDir dir;
  const std::string path = dir.File("ro.db");
  ASSERT_TRUE(OpenForWriting(path).ok());
  auto db = OpenReadOnly(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_TRUE((*db)->read_only());
  Status s = (*db)->Exec("INSERT INTO metric_names(name) VALUES('x')");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("readonly"), std::string::npos) << s.message();
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM metric_names"), 0);
}

}  // namespace
}  // namespace batchlab::results
