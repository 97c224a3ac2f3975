// `--where` parsing and column lists; see where_clause.h.
#include "results/where_clause.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>
#include <fmt/format.h>

namespace batchlab::results {
namespace {

constexpr const char* kOperators = "= != < <= > >= like";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string ValidColumns() { return fmt::format("{}", fmt::join(RunSummaryColumns(), ", ")); }

std::variant<int64_t, double, std::string> TypedValue(std::string_view text) {
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
      text.back() == text.front()) {
    return std::string(text.substr(1, text.size() - 2));
  }
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end == s.c_str() + s.size()) return static_cast<int64_t>(i);
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (errno == 0 && end == s.c_str() + s.size()) return d;
  return s;
}

}  // namespace

const std::vector<std::string>& RunSummaryColumns() {
  static const std::vector<std::string> kColumns = {"sweep",
                                                    "sweep_version",
                                                    "run_id",
                                                    "ordinal",
                                                    "state",
                                                    "attempt",
                                                    "exit_code",
                                                    "batch_size",
                                                    "nodes",
                                                    "ranks_per_node",
                                                    "world_size",
                                                    "local_batch_size",
                                                    "accumulation",
                                                    "optimizer",
                                                    "lr_rule",
                                                    "lr_base",
                                                    "lr_base_batch_size",
                                                    "seed",
                                                    "model",
                                                    "dataset",
                                                    "precision",
                                                    "comm_backend",
                                                    "parameters",
                                                    "tokens_per_step",
                                                    "flops_per_step",
                                                    "outcome",
                                                    "steps",
                                                    "samples",
                                                    "seconds",
                                                    "target_step",
                                                    "target_samples",
                                                    "target_seconds",
                                                    "final_test_loss",
                                                    "final_test_accuracy",
                                                    "started_at",
                                                    "ended_at",
                                                    "host",
                                                    "sweep_id",
                                                    "run_key"};
  return kColumns;
}

bool IsRunSummaryColumn(std::string_view name) {
  const auto& cols = RunSummaryColumns();
  return std::find(cols.begin(), cols.end(), name) != cols.end();
}

StatusOr<WhereFilter> ParseWhere(std::string_view clause) {
  const std::string quoted = fmt::format("--where '{}'", clause);
  std::string_view rest = Trim(clause);
  size_t n = 0;
  while (n < rest.size() && (IsNameChar(rest[n]) || rest[n] == '.')) ++n;
  WhereFilter f;
  f.column = std::string(rest.substr(0, n));
  if (f.column.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: expected `column op value` (e.g. batch_size>=1024); valid columns: {}",
                    quoted, ValidColumns()));
  }
  // A dotted name is a swept parameter (run_params), checked against the database later.
  f.is_param = f.column.find('.') != std::string::npos;
  if (!f.is_param && !IsRunSummaryColumn(f.column)) {
    return InvalidArgumentError(fmt::format("{}: unknown column '{}'; valid columns: {}", quoted,
                                            f.column, ValidColumns()));
  }
  rest = Trim(rest.substr(n));
  // The operator: the run of symbol characters, or the word `like`.
  size_t m = 0;
  if (rest.size() >= 4 &&
      std::equal(rest.begin(), rest.begin() + 4, "like",
                 [](char a, char b) { return std::tolower(a) == b; }) &&
      (rest.size() == 4 || !IsNameChar(rest[4]))) {
    m = 4;
    f.op = "LIKE";
  } else {
    while (m < rest.size() && rest[m] != '\0' && std::strchr("=!<>~", rest[m]) != nullptr) ++m;
    const std::string op(rest.substr(0, m));
    if (op == "=" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
      f.op = op;
    } else {
      std::string shown = op.empty() ? std::string(rest.substr(0, rest.find(' '))) : op;
      return InvalidArgumentError(
          fmt::format("{}: bad operator '{}' after column '{}'; valid "
                      "operators: {}",
                      quoted, shown, f.column, kOperators));
    }
  }
  std::string_view value = Trim(rest.substr(m));
  if (value.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: missing value after '{} {}'", quoted, f.column, f.op));
  }
  f.value = f.op == "LIKE" ? std::variant<int64_t, double, std::string>(std::string(value))
                           : TypedValue(value);
  if (f.op == "LIKE" && value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
      value.back() == value.front()) {
    f.value = std::string(value.substr(1, value.size() - 2));
  }
  return f;
}

std::string WhereSql(const WhereFilter& f) {
  if (f.is_param) {
    return fmt::format(
        "EXISTS (SELECT 1 FROM run_params p WHERE p.run_key = run_summary.run_key AND p.name = ? "
        "AND p.value {} ?)",
        f.op);
  }
  return fmt::format("{} {} ?", f.column, f.op);
}

int BindWhereValue(Statement& st, int index, const WhereFilter& f) {
  if (f.is_param) st.BindText(index++, f.column);
  if (const auto* i = std::get_if<int64_t>(&f.value)) {
    st.BindInt(index, *i);
  } else if (const auto* d = std::get_if<double>(&f.value)) {
    st.BindDouble(index, *d);
  } else {
    st.BindText(index, std::get<std::string>(f.value));
  }
  return index + 1;
}

StatusOr<std::vector<std::string>> ParseColumns(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = Trim(list.substr(0, comma));
    if (!name.empty()) {
      if (!IsRunSummaryColumn(name)) {
        return InvalidArgumentError(
            fmt::format("--columns: unknown column '{}'; valid columns: {}", name, ValidColumns()));
      }
      out.emplace_back(name);
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (out.empty()) {
    return InvalidArgumentError(
        fmt::format("--columns: no column given; valid columns: {}", ValidColumns()));
  }
  return out;
}

}  // namespace batchlab::results
