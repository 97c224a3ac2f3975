// A small RAII wrapper over one SQLite connection and its prepared statements.
//
// Every SQLite call goes through BATCHLAB_SQLITE_CHECK, which turns a failing result code into a
// Status carrying what was being done and SQLite's message (plus file:line when BATCHLAB_DEBUG=1;
// source paths never reach users otherwise). Values are always bound as parameters (never pasted
// into SQL text), and text is always stored as valid UTF-8 (utf8_text.h).
//
// Read-only connections are opened with SQLITE_OPEN_READONLY, so no statement run on them can
// change the file; every connection gets a busy timeout, so a reader waits for (rather than
// fails on) a writer's brief exclusive moments.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto db, Database::Open("batchlab.db", Database::Mode::kReadOnly));
//   BATCHLAB_ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT run_id, seconds FROM run_summary "
//                                                  "WHERE batch_size >= ?"));
//   st.BindInt(1, 1024);
//   while (true) {
//     BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
//     if (!row) break;
//     fmt::print("{} {}\n", st.ColumnText(0), st.ColumnDouble(1));
//   }
//
// A Database and its Statements belong to one thread at a time (connections are opened with
// SQLITE_OPEN_NOMUTEX); give each thread its own connection.
//
// To open a batchlab results database for reading (schema version checked), use
// results::OpenReadOnly in results/schema.h.
#ifndef BATCHLAB_RESULTS_DATABASE_H_
#define BATCHLAB_RESULTS_DATABASE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace batchlab::results {

// The Status for SQLite result code `rc` on connection `db` (may be null), raised at file:line
// while doing `what`. BUSY/LOCKED, FULL and IOERR map to kUnavailable (FULL and IOERR with a hint
// about the disk), NOTADB/CORRUPT to kFailedPrecondition, everything else to kInternal.
Status SqliteError(sqlite3* db, int rc, const char* file, int line, std::string_view what);

// True for the result codes that mean success: SQLITE_OK, SQLITE_ROW, SQLITE_DONE.
bool SqliteOk(int rc);

}  // namespace batchlab::results

// Evaluates `expr` (an SQLite call returning a result code) and returns a Status naming
// file:line, the SQLite message and `what` from the enclosing function if it failed.
#define BATCHLAB_SQLITE_CHECK(db, expr, what)                                                \
  do {                                                                                       \
    int batchlab_sqlite_rc_ = (expr);                                                        \
    if (!::batchlab::results::SqliteOk(batchlab_sqlite_rc_))                                 \
      return ::batchlab::results::SqliteError((db), batchlab_sqlite_rc_, __FILE__, __LINE__, \
                                              (what));                                       \
  } while (0)

namespace batchlab::results {

// One prepared statement. Bind* record the first failure, which Step()/Run() then report, so a
// chain of binds needs no error checks of its own. Parameter indexes start at 1, columns at 0.
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindText(int index, std::string_view value);
  Statement& BindNull(int index);
  Statement& BindOptionalInt(int index, const std::optional<int64_t>& value);
  Statement& BindOptionalDouble(int index, const std::optional<double>& value);

  // Advances: true when a row is available, false when the statement is done.
  StatusOr<bool> Step();
  // Steps to completion (for statements that return no rows), then resets for reuse.
  Status Run();
  // Makes the statement ready to run again; bindings are kept until rebound.
  Status Reset();

  int ColumnCount() const;
  std::string ColumnName(int column) const;
  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  int ColumnType(int column) const;
  bool ColumnIsNull(int column) const;
  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::optional<int64_t> ColumnOptionalInt(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;

  // True if the statement cannot change the database (sqlite3_stmt_readonly).
  bool IsReadOnly() const;
  const std::string& sql() const { return sql_; }

 private:
  void Finalize();
  void NoteBind(int rc, int index);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  Status bind_status_;
};

class Database {
 public:
  enum class Mode {
    kReadWrite,  // creates the file if absent
    kReadOnly,   // SQLITE_OPEN_READONLY: the file must exist; nothing can change it
  };
  static constexpr int kDefaultBusyTimeoutMs = 10000;

  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path, Mode mode,
                                                  int busy_timeout_ms = kDefaultBusyTimeoutMs);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that take no parameters (DDL, PRAGMA, BEGIN/COMMIT).
  Status Exec(std::string_view sql);
  StatusOr<Statement> Prepare(std::string_view sql);

  // The first column of the first row of `sql` as an integer (e.g. "PRAGMA user_version").
  StatusOr<int64_t> QueryInt(std::string_view sql);

  int64_t LastInsertRowId() const;
  int Changes() const;
  bool read_only() const { return mode_ == Mode::kReadOnly; }
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::string path, Mode mode)
      : db_(db), path_(std::move(path)), mode_(mode) {}

  sqlite3* db_;
  std::string path_;
  Mode mode_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back on destruction unless committed.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
//   ... statements ...
//   BATCHLAB_RETURN_IF_ERROR(tx.Commit());
class Transaction {
 public:
  static StatusOr<Transaction> Begin(Database& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_DATABASE_H_
