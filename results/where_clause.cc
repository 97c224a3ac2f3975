// `--where` parsing and column lists; see where_clause.h.
#include "results/where_clause.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>
#include <fmt/format.h>

#include "base/closest_name.h"

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

bool IsNumericColumn(std::string_view name) {
  static const std::vector<std::string> kText = {
      "sweep",     "run_id",  "state",     "optimizer", "lr_rule", "model", "dataset",
      "precision", "comm_backend", "outcome", "host"};
  return IsRunSummaryColumn(name) && std::find(kText.begin(), kText.end(), name) == kText.end();
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
    return InvalidArgumentError(fmt::format("{}: unknown column '{}'{}; valid columns: {}", quoted,
                                            f.column, DidYouMean(f.column, RunSummaryColumns()),
                                            ValidColumns()));
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
  const bool quoted_value = value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
                            value.back() == value.front();
  if (!quoted_value && value.find_first_of(" \t") != std::string_view::npos) {
    // `batch_size>=256 nodes=2`: a second comparison without AND/OR, read as one odd value.
    return InvalidArgumentError(fmt::format(
        "{}: unexpected '{}' after the value of '{} {}'; join comparisons with AND, OR or a comma "
        "(e.g. 'batch_size>=256 AND nodes=2'), or quote a value that has spaces",
        quoted, Trim(value.substr(value.find_first_of(" \t"))), f.column, f.op));
  }
  f.value = f.op == "LIKE" ? std::variant<int64_t, double, std::string>(std::string(value))
                           : TypedValue(value);
  if (f.op == "LIKE" && quoted_value) f.value = std::string(value.substr(1, value.size() - 2));
  if (!f.is_param && f.op != "LIKE" && IsNumericColumn(f.column) &&
      std::holds_alternative<std::string>(f.value)) {
    return InvalidArgumentError(fmt::format(
        "{}: '{}' is not a number, and {} holds numbers; compare it with a number (e.g. {}{}256)",
        quoted, value, f.column, f.column, f.op));
  }
  return f;
}

StatusOr<WhereExpr> ParseWhereExpression(std::string_view expression) {
  const std::string quoted = fmt::format("--where '{}'", expression);
  WhereExpr e;
  e.any_of.emplace_back();
  // Splits at AND / OR / ',' outside quotes; each piece is one comparison.
  size_t start = 0;
  char quote = 0;
  auto flush = [&](size_t end) -> Status {
    const std::string_view piece = Trim(expression.substr(start, end - start));
    if (piece.empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: a comparison is missing before or after AND, OR or a comma; write e.g. "
          "'batch_size>=256 AND nodes=2'",
          quoted));
    }
    StatusOr<WhereFilter> f = ParseWhere(piece);
    if (!f.ok() && piece == Trim(expression)) return f.status();  // the whole expression
    if (!f.ok()) {
      return InvalidArgumentError(fmt::format("{}: in '{}': {}", quoted, piece,
                                              f.status().message().substr(
                                                  fmt::format("--where '{}': ", piece).size())));
    }
    e.any_of.back().push_back(std::move(f).value());
    return OkStatus();
  };
  auto word_at = [&](size_t i, std::string_view word) {
    if (i + word.size() > expression.size()) return false;
    for (size_t k = 0; k < word.size(); ++k) {
      if (std::tolower(static_cast<unsigned char>(expression[i + k])) != word[k]) return false;
    }
    const bool before = i == 0 || std::isspace(static_cast<unsigned char>(expression[i - 1]));
    const size_t after = i + word.size();
    return before &&
           (after == expression.size() || std::isspace(static_cast<unsigned char>(expression[after])));
  };
  for (size_t i = 0; i < expression.size(); ++i) {
    const char c = expression[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == ')') {
      return InvalidArgumentError(fmt::format(
          "{}: parentheses are not supported; AND binds tighter than OR (a AND b OR c is (a AND "
          "b) OR c), and several --where flags must all hold",
          quoted));
    } else if (c == ',' || word_at(i, "and")) {
      BATCHLAB_RETURN_IF_ERROR(flush(i));
      i += c == ',' ? 0 : 2;
      start = i + 1;
    } else if (word_at(i, "or")) {
      BATCHLAB_RETURN_IF_ERROR(flush(i));
      e.any_of.emplace_back();
      i += 1;
      start = i + 1;
    }
  }
  if (quote != 0) {
    return InvalidArgumentError(
        fmt::format("{}: a quote ({}) is not closed", quoted, std::string(1, quote)));
  }
  BATCHLAB_RETURN_IF_ERROR(flush(expression.size()));
  return e;
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

std::string WhereSql(const WhereExpr& e) {
  std::vector<std::string> groups;
  for (const auto& group : e.any_of) {
    std::vector<std::string> parts;
    for (const WhereFilter& f : group) parts.push_back(WhereSql(f));
    groups.push_back(fmt::format("({})", fmt::join(parts, " AND ")));
  }
  return fmt::format("({})", fmt::join(groups, " OR "));
}

int BindWhereValue(Statement& st, int index, const WhereExpr& e) {
  for (const auto& group : e.any_of) {
    for (const WhereFilter& f : group) index = BindWhereValue(st, index, f);
  }
  return index;
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
