// `--where` filters over the run_summary view: comparisons "column op value" joined with AND
// (or a comma) and OR, AND binding tighter, as in SQL. Parsed here and later bound as parameters
// (no value ever becomes SQL text; columns and operators come from fixed lists, so nothing the
// user typed is pasted into a statement).
//
//   BATCHLAB_ASSIGN_OR_RETURN(WhereExpr e, ParseWhereExpression("batch_size>=256 and nodes=2"));
//   sql += " AND " + WhereSql(e);  // then index = BindWhereValue(st, index, e)
//   BATCHLAB_ASSIGN_OR_RETURN(WhereFilter f, ParseWhere("batch_size>=1024"));  // one comparison
//   // f.column == "batch_size", f.op == ">=", f.value == int64_t{1024}
//
// A dotted name filters on a swept parameter instead (run_params), e.g. `optimizer.momentum>0.5`
// or `lr.rule=linear`; PrepareRunList checks that the database knows the name.
//
// Operators: = != < <= > >= like (case-insensitive `like`, SQL LIKE with % and _). A value that
// reads as an integer or a number is compared as one; quotes ('...' or "...") force text. A
// numeric column compared with a word (`batch_size>=abc`), parentheses, or words left over after
// a value (`batch_size>=256 nodes=2`) are errors naming the expression: never an empty result.
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
// A run_summary column that holds numbers (all but the names and states): compared with a word
// it can match nothing, so ParseWhere refuses that.
bool IsNumericColumn(std::string_view name);

struct WhereFilter {
  std::string column;     // one of RunSummaryColumns(), or a swept parameter name if is_param
  bool is_param = false;  // a dotted name (`lr.warmup_steps`): matched against run_params
  std::string op;         // one of "=", "!=", "<", "<=", ">", ">=", "LIKE"
  std::variant<int64_t, double, std::string> value;
};

// Comparisons joined by OR of AND groups: any group whose every comparison holds. Built from one
// WhereFilter it is that comparison alone.
struct WhereExpr {
  std::vector<std::vector<WhereFilter>> any_of;
  WhereExpr() = default;
  WhereExpr(WhereFilter f) : any_of{{std::move(f)}} {}  // NOLINT: one comparison is an expression
};

// Parses a whole `--where` expression: comparisons joined by AND, `,` (the same as AND) and OR.
// Errors (kInvalidArgument) quote the expression and name the bad part.
StatusOr<WhereExpr> ParseWhereExpression(std::string_view expression);

// Parses one `--where` comparison. Errors (kInvalidArgument) quote the clause and name the bad part:
// an unknown column (listing the valid ones), a bad operator (listing the valid ones), or a
// missing value.
StatusOr<WhereFilter> ParseWhere(std::string_view clause);

// "column op ?" for a parsed filter (safe to splice: column and op are from fixed lists); for a
// parameter, an EXISTS over run_params whose name and value are both bound.
std::string WhereSql(const WhereFilter& f);
std::string WhereSql(const WhereExpr& e);  // "((a AND b) OR (c))"
// Binds the filter's parameters from `index` on; returns the next free index.
int BindWhereValue(Statement& st, int index, const WhereFilter& f);
int BindWhereValue(Statement& st, int index, const WhereExpr& e);

// Parses a comma-separated column list (--columns a,b,c), each checked against
// RunSummaryColumns().
StatusOr<std::vector<std::string>> ParseColumns(std::string_view list);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_WHERE_CLAUSE_H_
