// `--where` filters over the run_summary view: "column op value", parsed here and later bound
// as a parameter (the value never becomes SQL text; the column and operator come from fixed
// lists, so nothing the user typed is pasted into a statement).
//
//   BATCHLAB_ASSIGN_OR_RETURN(WhereFilter f, ParseWhere("batch_size>=1024"));
//   // f.column == "batch_size", f.op == ">=", f.value == int64_t{1024}
//   sql += " AND " + WhereSql(f);  // then index = BindWhereValue(st, index, f)
//
// A dotted name filters on a swept parameter instead (run_params), e.g. `optimizer.momentum>0.5`
// or `lr.rule=linear`; PrepareRunList checks that the database knows the name.
//
// Operators: = != < <= > >= like (case-insensitive `like`, SQL LIKE with % and _). A value that
// reads as an integer or a number is compared as one; quotes ('...' or "...") force text.
#ifndef BATCHLAB_RESULTS_WHERE_CLAUSE_H_
#define BATCHLAB_RESULTS_WHERE_CLAUSE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "results/database.h"

namespace batchlab::results {

// The columns of the run_summary view, in view order.
const std::vector<std::string>& RunSummaryColumns();
bool IsRunSummaryColumn(std::string_view name);

struct WhereFilter {
  std::string column;     // one of RunSummaryColumns(), or a swept parameter name if is_param
  bool is_param = false;  // a dotted name (`lr.warmup_steps`): matched against run_params
  std::string op;         // one of "=", "!=", "<", "<=", ">", ">=", "LIKE"
  std::variant<int64_t, double, std::string> value;
};

// Parses one `--where` clause. Errors (kInvalidArgument) quote the clause and name the bad part:
// an unknown column (listing the valid ones), a bad operator (listing the valid ones), or a
// missing value.
StatusOr<WhereFilter> ParseWhere(std::string_view clause);

// "column op ?" for a parsed filter (safe to splice: column and op are from fixed lists); for a
// parameter, an EXISTS over run_params whose name and value are both bound.
std::string WhereSql(const WhereFilter& f);
// Binds the filter's parameters from `index` on; returns the next free index.
int BindWhereValue(Statement& st, int index, const WhereFilter& f);

// Parses a comma-separated column list (--columns a,b,c), each checked against
// RunSummaryColumns().
StatusOr<std::vector<std::string>> ParseColumns(std::string_view list);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_WHERE_CLAUSE_H_
