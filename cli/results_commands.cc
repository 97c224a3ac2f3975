// `batchlab results list|show|query|export|migrate`: read-only views of the results database
// (opened with SQLITE_OPEN_READONLY), except `migrate`, which upgrades an older schema in place.
//
//   batchlab results list --sweep quickstart --where 'batch_size>=256' --format csv
//   batchlab results show 3f2a9c
//   batchlab results query "SELECT batch_size, min(target_step) FROM run_summary GROUP BY 1"
//   batchlab results export --sweep quickstart --what metrics --format jsonl --out m.jsonl
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/shared_flags.h"
#include "results/run_details.h"
#include "results/run_query.h"
#include "results/schema.h"
#include "results/table_writer.h"
#include "results/where_clause.h"

namespace batchlab::cli {
namespace {

using results::OutputFormat;

const std::vector<std::string> kRowFormats = {"table", "csv", "json", "jsonl"};

struct ResultsArgs {
  // list
  std::string sweep, state, columns, format = "table";
  int sweep_version = 0;
  std::vector<std::string> where;
  // show
  std::string run_id;
  // query
  std::string sql;
  // export
  std::string what = "runs", out;
};

Status RunList(const CliContext& ctx, const ResultsArgs& a) {
  BATCHLAB_ASSIGN_OR_RETURN(
      OutputFormat format, results::ParseOutputFormat(a.format, "--format",
                                                      {OutputFormat::kTable, OutputFormat::kCsv,
                                                       OutputFormat::kJson, OutputFormat::kJsonl}));
  results::RunListOptions o;
  if (!a.sweep.empty()) o.sweep = a.sweep;
  if (a.sweep_version > 0) o.sweep_version = a.sweep_version;
  if (!a.state.empty()) o.state = a.state;
  for (const auto& expression : a.where) {
    BATCHLAB_ASSIGN_OR_RETURN(results::WhereExpr e, results::ParseWhereExpression(expression));
    o.where.push_back(std::move(e));
  }
  if (!a.columns.empty()) {
    BATCHLAB_ASSIGN_OR_RETURN(o.columns, results::ParseColumns(a.columns));
  }
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(ctx.db_path));
  BATCHLAB_ASSIGN_OR_RETURN(results::Statement st, results::PrepareRunList(*db, o));
  BATCHLAB_ASSIGN_OR_RETURN(int64_t rows, results::WriteRows(st, format, stdout));
  if (format == OutputFormat::kTable) {
    fmt::print("({} run{})\n", rows, rows == 1 ? "" : "s");
  }
  return OkStatus();
}

Status RunShow(const CliContext& ctx, const ResultsArgs& a) {
  BATCHLAB_ASSIGN_OR_RETURN(
      OutputFormat format, results::ParseOutputFormat(a.format, "--format",
                                                      {OutputFormat::kTable, OutputFormat::kJson}));
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(ctx.db_path));
  return results::WriteRunDetails(*db, a.run_id, stdout, format);
}

Status RunQuery(const CliContext& ctx, const ResultsArgs& a) {
  BATCHLAB_ASSIGN_OR_RETURN(
      OutputFormat format, results::ParseOutputFormat(a.format, "--format",
                                                      {OutputFormat::kTable, OutputFormat::kCsv,
                                                       OutputFormat::kJson, OutputFormat::kJsonl}));
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(ctx.db_path));
  BATCHLAB_ASSIGN_OR_RETURN(results::Statement st, results::PrepareUserQuery(*db, a.sql));
  auto rows = results::WriteRows(st, format, stdout);
  if (!rows.ok()) return InvalidArgumentError(fmt::format("query: {}", rows.status().message()));
  return OkStatus();
}

Status RunExport(const CliContext& ctx, const ResultsArgs& a) {
  if (a.what != "runs" && a.what != "metrics") {
    return InvalidArgumentError(
        fmt::format("--what '{}': unknown; valid values: runs, metrics", a.what));
  }
  BATCHLAB_ASSIGN_OR_RETURN(
      OutputFormat format, results::ParseOutputFormat(a.format, "--format",
                                                      {OutputFormat::kTable, OutputFormat::kCsv,
                                                       OutputFormat::kJson, OutputFormat::kJsonl}));
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(ctx.db_path));
  std::optional<int> version;
  if (a.sweep_version > 0) version = a.sweep_version;
  BATCHLAB_ASSIGN_OR_RETURN(int64_t sweep_id, results::ResolveSweepId(*db, a.sweep, version));
  BATCHLAB_ASSIGN_OR_RETURN(results::Statement st,
                            a.what == "runs" ? results::PrepareRunsExport(*db, sweep_id)
                                             : results::PrepareMetricsExport(*db, sweep_id));
  if (a.out.empty() || a.out == "-") {
    return results::WriteRows(st, format, stdout).status();
  }
  // Write beside the target (<out>.partial) and rename on success: never a half-written export,
  // and never a `.partial` file left behind, whatever fails.
  std::error_code ec;
  if (std::filesystem::is_directory(a.out, ec)) {
    return InvalidArgumentError(
        fmt::format("--out {}: is a folder; give the path of the file to write", a.out));
  }
  StatusOr<int64_t> rows = int64_t{0};
  AtomicWrite partial;  // `<out>.partial` until every row is written
  partial.temp_suffix = ".partial";
  const Status written = WriteFileAtomically(
      a.out,
      [&](std::FILE* file) {
        rows = results::WriteRows(st, format, file);
        return rows.status();
      },
      partial);
  if (!rows.ok()) return rows.status();  // the query's own error, as it is
  if (!written.ok()) {
    return Status(written.code(), fmt::format("--out {}: {}", a.out, written.message()));
  }
  fmt::print(stderr, "wrote {} {} rows to {}\n", *rows, a.what, a.out);
  return OkStatus();
}

Status RunMigrate(const CliContext& ctx) {
  results::SchemaOpenInfo info;
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenForWriting(ctx.db_path, &info));
  if (info.found_version == info.version) {
    fmt::print("{}: schema v{} is current\n", ctx.db_path, info.version);
  } else {
    fmt::print("{}: schema v{} -> v{}\n", ctx.db_path, info.found_version, info.version);
  }
  return OkStatus();
}

}  // namespace

void AddResultsCommands(CLI::App& app, CliContext& ctx) {
  auto* results = app.add_subcommand("results", "List, show, query and export results");
  AddVersionFlag(*results);
  results->require_subcommand(1);
  auto args = std::make_shared<ResultsArgs>();
  const std::string columns_help = fmt::format("Comma-separated columns (default {}); any of: {}",
                                               fmt::join(results::DefaultListColumns(), ","),
                                               fmt::join(results::RunSummaryColumns(), ","));

  auto* list = results->add_subcommand("list", "List runs with their parameters and outcome");
  AddVersionFlag(*list);
  list->add_option("--sweep", args->sweep, "Only this sweep (its latest version)");
  list->add_option("--sweep-version", args->sweep_version, "A specific version of --sweep");
  list->add_option("--state", args->state,
                   "Only runs in this state (pending, running, completed, target_reached, ...)");
  list->add_option("--where", args->where,
                   "Filter 'column op value' or 'swept.param op value'; op one of = != < <= > >= "
                   "like (repeatable)")
      ->allow_extra_args(false);
  list->add_option("--columns", args->columns, columns_help);
  AddFormatOption(*list, args->format, kRowFormats, "table, csv, json or jsonl");
  list->callback([&ctx, args] { ctx.status = RunList(ctx, *args); });

  auto* show = results->add_subcommand("show", "Show one run: summary, metrics, events, config");
  AddVersionFlag(*show);
  show->add_option("run_id", args->run_id, "Run id (or a unique prefix)")->required();
  AddFormatOption(*show, args->format, {"table", "json"}, "table or json");
  show->callback([&ctx, args] { ctx.status = RunShow(ctx, *args); });

  auto* query = results->add_subcommand("query", "Run read-only SQL on the database");
  AddVersionFlag(*query);
  query->add_option("sql", args->sql, "One read-only SQL statement (see docs/schema.md)")
      ->required();
  AddFormatOption(*query, args->format, kRowFormats, "table, csv, json or jsonl");
  query->callback([&ctx, args] { ctx.status = RunQuery(ctx, *args); });

  auto* exp = results->add_subcommand("export", "Export a sweep's runs or time series");
  AddVersionFlag(*exp);
  exp->add_option("--sweep", args->sweep, "Sweep name (its latest version)")->required();
  exp->add_option("--sweep-version", args->sweep_version, "A specific version of --sweep");
  exp->add_option("--what", args->what, "runs or metrics")->capture_default_str();
  AddFormatOption(*exp, args->format, kRowFormats, "table, csv, json or jsonl");
  exp->add_option("--out", args->out, "Output file (default: standard output)");
  exp->callback([&ctx, args] { ctx.status = RunExport(ctx, *args); });

  auto* migrate =
      results->add_subcommand("migrate", "Upgrade an older results database to this schema");
  AddVersionFlag(*migrate);
  migrate->callback([&ctx] { ctx.status = RunMigrate(ctx); });
}

}  // namespace batchlab::cli
