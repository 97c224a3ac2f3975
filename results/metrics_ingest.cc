// Exactly-once ingest of runner metrics files; see metrics_ingest.h.
#include "base/elapsed.h"
#include "results/metrics_ingest.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/run_protocol.h"

namespace batchlab::results {
namespace {

using nlohmann::json;


std::optional<int64_t> OptInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  const double v = it->get<double>();
  if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> OptDouble(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// A start-line fact: a positive finite number, else unknown (NULL).
std::optional<double> Fact(const json& j, const char* key) {
  std::optional<double> v = OptDouble(j, key);
  if (!v || !std::isfinite(*v) || *v <= 0) return std::nullopt;
  return v;
}
std::optional<int64_t> IntFact(const json& j, const char* key) {
  std::optional<double> v = Fact(j, key);
  if (!v || *v >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(*v));
}

// "('completed', 'target_reached', ...)": the protocol's final outcomes, as an SQL list.
std::string FinalOutcomesSql() {
  std::string out;
  for (const protocol::OutcomeEntry& e : protocol::kOutcomes) {
    if (e.final) out += fmt::format("{}'{}'", out.empty() ? "(" : ", ", e.name);
  }
  return out + ")";
}

std::string_view Excerpt(std::string_view line) {
  return line.size() > 120 ? line.substr(0, 120) : line;
}

}  // namespace

Status MetricsIngester::PrepareStatements() {
  if (prepared_) return OkStatus();
  BATCHLAB_ASSIGN_OR_RETURN(insert_name_,
                            db_.Prepare("INSERT OR IGNORE INTO metric_names(name) VALUES(?)"));
  BATCHLAB_ASSIGN_OR_RETURN(select_name_,
                            db_.Prepare("SELECT id FROM metric_names WHERE name = ?"));
  BATCHLAB_ASSIGN_OR_RETURN(
      load_cursor_, db_.Prepare("SELECT byte_offset, lines, last_seq, saw_end, anomalies FROM "
                                "ingest_cursors WHERE run_key = ? AND attempt = ?"));
  BATCHLAB_ASSIGN_OR_RETURN(
      save_cursor_,
      db_.Prepare("INSERT OR REPLACE INTO ingest_cursors(run_key, attempt, byte_offset, lines, "
                  "last_seq, saw_end, anomalies) VALUES(?, ?, ?, ?, ?, ?, ?)"));
  BATCHLAB_ASSIGN_OR_RETURN(
      select_outcome_,
      db_.Prepare("SELECT outcome FROM runs WHERE run_key = ? AND attempt = ? AND outcome IN " +
                  FinalOutcomesSql()));
  BATCHLAB_ASSIGN_OR_RETURN(insert_event_,
                            db_.Prepare("INSERT INTO events(run_key, attempt, time, kind, message) "
                                        "VALUES(?, ?, ?, ?, ?)"));
  BATCHLAB_ASSIGN_OR_RETURN(
      update_end_,
      db_.Prepare("UPDATE runs SET outcome = ?, steps = ?, samples = ?, seconds = ?, "
                  "target_step = ?, target_samples = ?, target_seconds = ?, final_test_loss = ?, "
                  "final_test_accuracy = ? WHERE run_key = ? AND attempt = ?"));
  BATCHLAB_ASSIGN_OR_RETURN(
      update_start_,
      db_.Prepare(
          "UPDATE runs SET host = coalesce(?, host), parameters = coalesce(?, parameters), "
          "tokens_per_step = coalesce(?, tokens_per_step), "
          "flops_per_step = coalesce(?, flops_per_step) WHERE run_key = ? AND attempt = ?"));
  BATCHLAB_ASSIGN_OR_RETURN(
      update_attempt_world_,
      db_.Prepare("UPDATE attempts SET world_size = ? WHERE run_key = ? AND attempt = ?"));
  BATCHLAB_ASSIGN_OR_RETURN(
      update_attempt_resume_,
      db_.Prepare("UPDATE attempts SET resumed_from = ?, resumed_step = ? WHERE run_key = ? AND "
                  "attempt = ?"));
  prepared_ = true;
  return OkStatus();
}

StatusOr<MetricsIngester::Cursor> MetricsIngester::LoadCursor(int64_t run_key, int attempt) {
  Cursor c;
  load_cursor_.BindInt(1, run_key).BindInt(2, attempt);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, load_cursor_.Step());
  if (row) {
    c.byte_offset = load_cursor_.ColumnInt(0);
    c.lines = load_cursor_.ColumnInt(1);
    c.last_seq = load_cursor_.ColumnInt(2);
    c.saw_end = load_cursor_.ColumnInt(3) != 0;
    c.anomalies = load_cursor_.ColumnInt(4);
  }
  BATCHLAB_RETURN_IF_ERROR(load_cursor_.Reset());
  return c;
}

Status MetricsIngester::SaveCursor(int64_t run_key, int attempt, const Cursor& c) {
  save_cursor_.BindInt(1, run_key)
      .BindInt(2, attempt)
      .BindInt(3, c.byte_offset)
      .BindInt(4, c.lines)
      .BindInt(5, c.last_seq)
      .BindInt(6, c.saw_end ? 1 : 0)
      .BindInt(7, c.anomalies);
  return save_cursor_.Run();
}

StatusOr<std::string> MetricsIngester::EndOutcome(const Where& w) {
  select_outcome_.BindInt(1, w.run_key).BindInt(2, w.attempt);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, select_outcome_.Step());
  std::string outcome = row ? select_outcome_.ColumnText(0) : "";
  BATCHLAB_RETURN_IF_ERROR(select_outcome_.Reset());
  return outcome;
}

StatusOr<int64_t> MetricsIngester::NameId(const std::string& name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  BATCHLAB_RETURN_IF_ERROR(insert_name_.BindText(1, name).Run());
  select_name_.BindText(1, name);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, select_name_.Step());
  if (!row) return InternalError(fmt::format("metric name '{}' vanished", name));
  int64_t id = select_name_.ColumnInt(0);
  BATCHLAB_RETURN_IF_ERROR(select_name_.Reset());
  name_ids_.emplace(name, id);
  return id;
}

Status MetricsIngester::RecordAnomaly(const Where& w, const char* kind, const std::string& message,
                                      Cursor& c, IngestStats& stats) {
  ++c.anomalies;
  ++stats.anomalies;
  if (c.anomalies > kMaxAnomalyEvents + 1) return OkStatus();
  const bool last = c.anomalies == kMaxAnomalyEvents + 1;
  insert_event_.BindInt(1, w.run_key)
      .BindInt(2, w.attempt)
      .BindDouble(3, UnixSeconds())
      .BindText(4, last ? "anomalies_not_listed" : kind)
      .BindText(5, last ? fmt::format("{}: more than {} anomalies; the rest are only counted "
                                      "(ingest_cursors.anomalies)",
                                      w.path, kMaxAnomalyEvents)
                        : message);
  return insert_event_.Run();
}

Status MetricsIngester::StoreLine(const Where& w, std::string_view line, int64_t line_offset,
                                  Cursor& c, IngestStats& stats) {
  ++stats.lines_read;
  ++c.lines;
  auto at = [&] { return fmt::format("{} line {} (byte {})", w.path, c.lines, line_offset); };
  if (line.size() > kMaxLineBytes) {
    return RecordAnomaly(w, "line_too_long",
                         fmt::format("{}: {} bytes, over the {} byte limit; skipped: {}", at(),
                                     line.size(), kMaxLineBytes, Excerpt(line)),
                         c, stats);
  }
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return OkStatus();
  const MetricsLine& m = parser_.Parse(line);
  if (!m.error.empty()) {
    ++stats.corrupt_lines;
    return RecordAnomaly(w, "corrupt_metrics_line",
                         fmt::format("{}: {}; skipped: {}", at(), m.error, Excerpt(line)), c,
                         stats);
  }
  const int64_t seq = m.seq;
  const std::string& kind = m.kind;
  if (c.saw_end) {
    BATCHLAB_RETURN_IF_ERROR(RecordAnomaly(
        w, "line_after_end",
        fmt::format("{}: a `{}` line (seq {}) after the end line; stored", at(), kind, seq), c,
        stats));
  }
  if (seq <= c.last_seq) {
    BATCHLAB_RETURN_IF_ERROR(RecordAnomaly(
        w, "seq_not_increasing",
        fmt::format("{}: seq {} after seq {}; stored (a (seq, metric) already stored keeps its "
                    "first value)",
                    at(), seq, c.last_seq),
        c, stats));
  }
  std::string non_finite;
  for (size_t i = 0; i < m.num_values; ++i) {
    if (std::isfinite(m.values[i].second)) continue;
    non_finite += fmt::format("{}`{}` = {}", non_finite.empty() ? "" : ", ", m.values[i].first,
                              m.values[i].second);
  }
  if (!non_finite.empty() || m.non_finite_tokens) {
    BATCHLAB_RETURN_IF_ERROR(RecordAnomaly(
        w, "non_finite_value",
        fmt::format("{}: seq {} has non-finite values ({}); stored, NaN as NULL", at(), seq,
                    non_finite.empty() ? "in non-numeric fields" : non_finite),
        c, stats));
  }
  c.last_seq = seq;
  ++stats.lines_stored;
  if (kind == protocol::kLineEnd) {
    c.saw_end = true;
    stats.saw_end = true;
  }
  if (kind == protocol::kLineStart || kind == protocol::kLineEnd) {
    return StoreStartOrEnd(w, m.non_finite_tokens ? std::string_view(m.as_json) : line, kind);
  }
  if (kind == protocol::kLineResume) return StoreResume(w, line, seq);
  return StoreValues(w, m, stats);
}

Status MetricsIngester::StoreStartOrEnd(const Where& w, std::string_view line,
                                        const std::string& kind) {
  const int64_t run_key = w.run_key;
  const int attempt = w.attempt;
  const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (kind == protocol::kLineStart) {
    // The host, and the facts the analysis reads from the run (docs/schema.md, `runs`).
    auto host = j.find("host");
    if (host != j.end() && host->is_string()) {
      update_start_.BindText(1, host->get_ref<const std::string&>());
    } else {
      update_start_.BindNull(1);
    }
    // The rank count this attempt ran with (slurm.elastic: perhaps fewer than the run's).
    if (const std::optional<int64_t> world = IntFact(j, "world_size")) {
      BATCHLAB_RETURN_IF_ERROR(
          update_attempt_world_.BindInt(1, *world).BindInt(2, run_key).BindInt(3, attempt).Run());
    }
    return update_start_.BindOptionalInt(2, IntFact(j, "parameters"))
        .BindOptionalInt(3, IntFact(j, "tokens_per_step"))
        .BindOptionalDouble(4, Fact(j, "flops_per_step"))
        .BindInt(5, run_key)
        .BindInt(6, attempt)
        .Run();
  }
  if (kind == protocol::kLineEnd) {
    auto outcome = j.find("outcome");
    if (outcome != j.end() && outcome->is_string()) {
      update_end_.BindText(1, outcome->get_ref<const std::string&>());
    } else {
      update_end_.BindNull(1);
    }
    update_end_.BindOptionalInt(2, OptInt(j, "steps"))
        .BindOptionalInt(3, OptInt(j, "samples"))
        .BindOptionalDouble(4, OptDouble(j, "seconds"))
        .BindOptionalInt(5, OptInt(j, "target_step"))
        .BindOptionalInt(6, OptInt(j, "target_samples"))
        .BindOptionalDouble(7, OptDouble(j, "target_seconds"))
        .BindOptionalDouble(8, OptDouble(j, "final_test_loss"))
        .BindOptionalDouble(9, OptDouble(j, "final_test_accuracy"))
        .BindInt(10, run_key)
        .BindInt(11, attempt);
    return update_end_.Run();
  }
  return OkStatus();
}

Status MetricsIngester::StoreResume(const Where& w, std::string_view line, int64_t seq) {
  const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return OkStatus();
  auto event = [&](const char* kind, const std::string& message) {
    insert_event_.BindInt(1, w.run_key)
        .BindInt(2, w.attempt)
        .BindDouble(3, UnixSeconds())
        .BindText(4, kind)
        .BindText(5, message);
    return insert_event_.Run();
  };
  if (const auto rejected = j.find("rejected"); rejected != j.end() && rejected->is_array()) {
    for (const json& r : *rejected) {
      if (!r.is_object()) continue;
      BATCHLAB_RETURN_IF_ERROR(event(
          "checkpoint_rejected",
          fmt::format("checkpoint {} not used: {}", r.value("file", std::string("?")),
                      r.value("reason", std::string("?")))));
    }
  }
  const std::optional<int64_t> from = OptInt(j, "from_attempt"), step = OptInt(j, "step");
  if (!from || !step || *step <= 0 || *from >= w.attempt || *from < 1) {
    return event("resume", "no usable checkpoint: this attempt starts from step 0");
  }
  BATCHLAB_RETURN_IF_ERROR(update_attempt_resume_.BindInt(1, *from)
                               .BindInt(2, *step)
                               .BindInt(3, w.run_key)
                               .BindInt(4, w.attempt)
                               .Run());
  // Lines of the earlier attempt up to its checkpoint: this attempt's history.
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement copy,
      db_.Prepare("INSERT OR IGNORE INTO metrics(run_key, attempt, seq, name_id, step, value) "
                  "SELECT run_key, ?, seq, name_id, step, value FROM metrics "
                  "WHERE run_key = ? AND attempt = ? AND seq < ?"));
  BATCHLAB_RETURN_IF_ERROR(
      copy.BindInt(1, w.attempt).BindInt(2, w.run_key).BindInt(3, *from).BindInt(4, seq).Run());
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement last, db_.Prepare("SELECT max(step) FROM metrics WHERE run_key = ? AND attempt = ?"));
  last.BindInt(1, w.run_key).BindInt(2, *from);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, last.Step());
  const int64_t reached = row && !last.ColumnIsNull(0) ? last.ColumnInt(0) : *step;
  return event("resume",
               fmt::format("resumed from the checkpoint at step {} of attempt {} ({}); steps "
                           "trained again: {}",
                           *step, *from, j.value("file", std::string("?")),
                           std::max<int64_t>(0, reached - *step)));
}

// step, eval (and any future kind): every numeric field but seq and step is a metric value,
// stored with one multi-row INSERT per line.
Status MetricsIngester::StoreValues(const Where& w, const MetricsLine& m, IngestStats& stats) {
  size_t done = 0;
  while (done < m.num_values) {
    const size_t n = std::min(m.num_values - done, kMaxRowsPerInsert);
    BATCHLAB_ASSIGN_OR_RETURN(Statement * insert, InsertRows(n));
    int p = 1;
    for (size_t i = done; i < done + n; ++i) {
      BATCHLAB_ASSIGN_OR_RETURN(int64_t name_id, NameId(m.values[i].first));
      insert->BindInt(p, w.run_key)
          .BindInt(p + 1, w.attempt)
          .BindInt(p + 2, m.seq)
          .BindInt(p + 3, name_id)
          .BindOptionalInt(p + 4, m.step)
          .BindDouble(p + 5, m.values[i].second);
      p += 6;
    }
    BATCHLAB_RETURN_IF_ERROR(insert->Run());
    stats.values_stored += db_.Changes();
    done += n;
  }
  return OkStatus();
}

StatusOr<Statement*> MetricsIngester::InsertRows(size_t n) {
  auto it = insert_rows_.find(n);
  if (it != insert_rows_.end()) return &it->second;
  std::string sql =
      "INSERT OR IGNORE INTO metrics(run_key, attempt, seq, name_id, step, value) "
      "VALUES(?, ?, ?, ?, ?, ?)";
  for (size_t i = 1; i < n; ++i) sql += ", (?, ?, ?, ?, ?, ?)";
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db_.Prepare(sql));
  return &insert_rows_.emplace(n, std::move(st)).first->second;
}

StatusOr<IngestStats> MetricsIngester::Ingest(int64_t run_key, int attempt, const std::string& path,
                                              IngestPass pass) {
  BATCHLAB_RETURN_IF_ERROR(PrepareStatements());
  const Where w{run_key, attempt, path};
  IngestStats stats;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    BATCHLAB_ASSIGN_OR_RETURN(Cursor c, LoadCursor(run_key, attempt));
    stats.saw_end = c.saw_end;
    if (c.saw_end) {
      BATCHLAB_ASSIGN_OR_RETURN(stats.end_outcome, EndOutcome(w));
    }
    return stats;  // the runner has not written anything yet
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec) return InternalError(fmt::format("cannot stat metrics file {}: {}", path, ec.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return InternalError(fmt::format("cannot open metrics file {}", path));

  BATCHLAB_ASSIGN_OR_RETURN(auto first_tx, Transaction::Begin(db_));
  std::optional<Transaction> tx(std::move(first_tx));
  BATCHLAB_ASSIGN_OR_RETURN(Cursor c, LoadCursor(run_key, attempt));
  stats.saw_end = c.saw_end;
  if (size < c.byte_offset) {
    insert_event_.BindInt(1, run_key)
        .BindInt(2, attempt)
        .BindDouble(3, UnixSeconds())
        .BindText(4, "metrics_file_rewound")
        .BindText(5, fmt::format("{} is shorter ({} bytes) than already ingested ({} bytes); "
                                 "reading it again from the start, storing only unseen rows",
                                 path, size, c.byte_offset));
    BATCHLAB_RETURN_IF_ERROR(insert_event_.Run());
    const int64_t anomalies = c.anomalies;
    c = Cursor{};
    c.anomalies = anomalies;
  }
  in.seekg(c.byte_offset);

  int lines_in_tx = 0;
  // Commits every kBatchLines lines, so a long file is stored in bounded transactions.
  auto line_done = [&]() -> Status {
    if (++lines_in_tx < kBatchLines) return OkStatus();
    BATCHLAB_RETURN_IF_ERROR(SaveCursor(run_key, attempt, c));
    BATCHLAB_RETURN_IF_ERROR(tx->Commit());
    tx.reset();
    BATCHLAB_ASSIGN_OR_RETURN(auto next, Transaction::Begin(db_));
    tx.emplace(std::move(next));
    lines_in_tx = 0;
    return OkStatus();
  };
  // A line longer than kMaxLineBytes is never held in memory: its bytes are counted, skipped.
  bool skipping = false;
  int64_t skipped = 0;
  std::string skipped_head;
  auto skip_done = [&](const char* how) -> Status {
    ++stats.lines_read;
    ++c.lines;
    BATCHLAB_RETURN_IF_ERROR(RecordAnomaly(
        w, "line_too_long",
        fmt::format("{} line {} (byte {}): {} bytes{}, over the {} byte limit; skipped: {}", path,
                    c.lines, c.byte_offset, skipped, how, kMaxLineBytes, skipped_head),
        c, stats));
    c.byte_offset += skipped;
    skipping = false;
    return line_done();
  };

  // Read in chunks; `pending` holds the bytes after the last newline seen so far.
  std::string pending;
  std::string chunk(1 << 20, '\0');
  Status status;
  while (status.ok() && in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    std::string_view data(chunk.data(), static_cast<size_t>(got));
    if (skipping) {
      const size_t nl = data.find('\n');
      skipped += static_cast<int64_t>(nl == std::string_view::npos ? data.size() : nl + 1);
      if (nl == std::string_view::npos) continue;
      status = skip_done("");
      data.remove_prefix(nl + 1);
    }
    pending.append(data);
    size_t start = 0;
    for (size_t nl; status.ok() && (nl = pending.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      std::string_view line(pending.data() + start, nl - start);
      status = StoreLine(w, line, c.byte_offset, c, stats);
      if (!status.ok()) break;
      c.byte_offset += static_cast<int64_t>(nl - start + 1);
      status = line_done();
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLineBytes) {
      skipping = true;
      skipped = static_cast<int64_t>(pending.size());
      skipped_head = std::string(Excerpt(pending));
      pending.clear();
    }
  }
  // The writer is gone: a last line without its newline will never be completed.
  if (status.ok() && pass == IngestPass::kFinal && skipping) {
    status = skip_done(" without a newline at the end of the file");
  } else if (status.ok() && pass == IngestPass::kFinal && !pending.empty()) {
    status = RecordAnomaly(w, "truncated_line",
                           fmt::format("{} line {} (byte {}): the last line has no newline (its "
                                       "writer stopped mid-line); read as it is: {}",
                                       path, c.lines + 1, c.byte_offset, Excerpt(pending)),
                           c, stats);
    if (status.ok()) status = StoreLine(w, pending, c.byte_offset, c, stats);
    c.byte_offset += static_cast<int64_t>(pending.size());
  }
  if (status.ok()) status = SaveCursor(run_key, attempt, c);
  if (status.ok() && tx) status = tx->Commit();
  if (!status.ok()) {
    name_ids_.clear();  // ids from a rolled-back transaction must not be reused
    return status.WithContext(fmt::format("ingesting {}", path));
  }
  if (c.saw_end) {
    stats.saw_end = true;
    BATCHLAB_ASSIGN_OR_RETURN(stats.end_outcome, EndOutcome(w));
  }
  return stats;
}

}  // namespace batchlab::results
