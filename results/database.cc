// RAII SQLite connection, statements and transactions; see database.h.
#include "results/database.h"

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/core.h>

#include "results/utf8_text.h"

namespace batchlab::results {

bool SqliteOk(int rc) { return rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE; }

Status SqliteError(sqlite3* db, int rc, const char* file, int line, std::string_view what) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  // The source location is for developers only (BATCHLAB_DEBUG=1): users get what was being done
  // and SQLite's own words, never a path into batchlab's source tree.
  const char* debug = std::getenv("BATCHLAB_DEBUG");
  std::string where = debug != nullptr && *debug != '\0' && *debug != '0'
                          ? fmt::format("{}:{}: ", file, line)
                          : std::string();
  std::string message = fmt::format("{} ({}sqlite: {})", what, where, detail);
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return UnavailableError(std::move(message) +
                              "; the disk holding the database is full: free space and run the "
                              "same command again");
    case SQLITE_IOERR:
      return UnavailableError(std::move(message) +
                              "; the database could not be read or written (disk full or failing?)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(std::move(message));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return FailedPreconditionError(std::move(message) +
                                     "; the file is not a SQLite database or is corrupt");
    case SQLITE_CANTOPEN:
      return NotFoundError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

// ---- Statement ----

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql)
    : db_(db), stmt_(stmt), sql_(std::move(sql)) {}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(other.stmt_),
      sql_(std::move(other.sql_)),
      bind_status_(std::move(other.bind_status_)) {
  other.stmt_ = nullptr;
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    Finalize();
    db_ = other.db_;
    stmt_ = other.stmt_;
    sql_ = std::move(other.sql_);
    bind_status_ = std::move(other.bind_status_);
    other.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { Finalize(); }

void Statement::Finalize() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
  stmt_ = nullptr;
}

void Statement::NoteBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteError(db_, rc, __FILE__, __LINE__,
                               fmt::format("binding parameter {} of {}", index, sql_));
  }
}

Statement& Statement::BindInt(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}
Statement& Statement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}
Statement& Statement::BindText(int index, std::string_view value) {
  // Only valid UTF-8 is ever stored as TEXT (utf8_text.h); the common case binds without a copy.
  std::string escaped;
  if (!IsValidUtf8Text(value)) {
    escaped = ValidUtf8Text(value);
    value = escaped;
  }
  NoteBind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}
Statement& Statement::BindNull(int index) {
  NoteBind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}
Statement& Statement::BindOptionalInt(int index, const std::optional<int64_t>& value) {
  return value ? BindInt(index, *value) : BindNull(index);
}
Statement& Statement::BindOptionalDouble(int index, const std::optional<double>& value) {
  return value ? BindDouble(index, *value) : BindNull(index);
}

StatusOr<bool> Statement::Step() {
  if (!bind_status_.ok()) {
    Status s = bind_status_;
    bind_status_ = OkStatus();
    return s;
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status s = SqliteError(db_, rc, __FILE__, __LINE__, fmt::format("running {}", sql_));
  sqlite3_reset(stmt_);
  return s;
}

Status Statement::Run() {
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) break;
  }
  return Reset();
}

Status Statement::Reset() {
  BATCHLAB_SQLITE_CHECK(db_, sqlite3_reset(stmt_), fmt::format("resetting {}", sql_));
  return OkStatus();
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }
std::string Statement::ColumnName(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name != nullptr ? name : "";
}
int Statement::ColumnType(int column) const { return sqlite3_column_type(stmt_, column); }
bool Statement::ColumnIsNull(int column) const { return ColumnType(column) == SQLITE_NULL; }
int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}
std::optional<int64_t> Statement::ColumnOptionalInt(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnInt(column);
}
std::optional<double> Statement::ColumnOptionalDouble(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnDouble(column);
}
bool Statement::IsReadOnly() const { return sqlite3_stmt_readonly(stmt_) != 0; }

// ---- Database ----

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, Mode mode,
                                                   int busy_timeout_ms) {
  std::error_code ec;
  if (mode == Mode::kReadOnly && !std::filesystem::exists(path, ec)) {
    return NotFoundError(fmt::format(
        "database {} does not exist: pass --db PATH, or create it with `batchlab sweep run SPEC`",
        path));
  }
  int flags =
      mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;  // one connection per thread
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteError(db, rc, __FILE__, __LINE__, fmt::format("opening database {}", path));
    sqlite3_close(db);
    if (rc == SQLITE_CANTOPEN && mode == Mode::kReadOnly) {
      return NotFoundError(fmt::format(
          "database {} cannot be opened for reading (does it exist? pass --db PATH): {}", path,
          s.message()));
    }
    return s;
  }
  std::unique_ptr<Database> out(new Database(db, path, mode));
  BATCHLAB_SQLITE_CHECK(db, sqlite3_busy_timeout(db, busy_timeout_ms), "setting the busy timeout");
  sqlite3_extended_result_codes(db, 1);
  return out;
}

Database::~Database() {
  // Statements are owned by callers and must be gone by now; close_v2 defers if they are not.
  sqlite3_close_v2(db_);
}

Status Database::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what =
        fmt::format("executing {}", text.size() > 200 ? text.substr(0, 200) + "..." : text);
    sqlite3_free(err);
    return SqliteError(db_, rc, __FILE__, __LINE__, what);
  }
  return OkStatus();
}

StatusOr<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  BATCHLAB_SQLITE_CHECK(
      db_, sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail),
      fmt::format("preparing {}", sql));
  if (stmt == nullptr) return InvalidArgumentError(fmt::format("no SQL statement in '{}'", sql));
  Statement out(db_, stmt, std::string(sql));
  // Anything after the statement must compile to nothing (whitespace, `;`, comments).
  const char* end = sql.data() + sql.size();
  if (tail != nullptr && tail < end) {
    sqlite3_stmt* extra = nullptr;
    const int rc = sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail), &extra, nullptr);
    sqlite3_finalize(extra);
    if (rc != SQLITE_OK || extra != nullptr) {
      return InvalidArgumentError(
          fmt::format("only one SQL statement at a time; found more after '{}'", out.sql()));
    }
  }
  return out;
}

StatusOr<int64_t> Database::QueryInt(std::string_view sql) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, Prepare(sql));
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return InternalError(fmt::format("{} returned no row", sql));
  return st.ColumnInt(0);
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
int Database::Changes() const { return sqlite3_changes(db_); }

// ---- Transaction ----

StatusOr<Transaction> Transaction::Begin(Database& db) {
  BATCHLAB_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) db_->Exec("ROLLBACK").IgnoreError();
}

Status Transaction::Commit() {
  Status s = db_->Exec("COMMIT");
  if (s.ok()) db_ = nullptr;  // otherwise the destructor rolls back
  return s;
}

}  // namespace batchlab::results
