// `--where` parsing: every operator, typed values, quotes, and the errors that name the bad part.
#include "results/where_clause.h"

#include <gtest/gtest.h>

#include <string>

namespace batchlab::results {
namespace {

TEST(WhereClauseTest, ParsesEveryOperatorWithTypedValues) {
  struct Case {
    const char* clause;
    const char* column;
    const char* op;
  };
  for (const Case& c :
       {Case{"batch_size>=1024", "batch_size", ">="}, Case{"batch_size <= 64", "batch_size", "<="},
        Case{"nodes=2", "nodes", "="}, Case{"nodes != 2", "nodes", "!="},
        Case{"seconds<3.5", "seconds", "<"}, Case{"steps >10", "steps", ">"},
        Case{"lr_rule like lin%", "lr_rule", "LIKE"},
        Case{"lr_rule LIKE 'sq%'", "lr_rule", "LIKE"}}) {
    auto f = ParseWhere(c.clause);
    ASSERT_TRUE(f.ok()) << c.clause << ": " << f.status().message();
    EXPECT_EQ(f->column, c.column) << c.clause;
    EXPECT_EQ(f->op, c.op) << c.clause;
  }
  EXPECT_EQ(std::get<int64_t>(ParseWhere("batch_size>=1024")->value), 1024);
  EXPECT_DOUBLE_EQ(std::get<double>(ParseWhere("lr_base = 0.05")->value), 0.05);
  EXPECT_EQ(std::get<std::string>(ParseWhere("lr_rule=linear")->value), "linear");
  EXPECT_EQ(std::get<std::string>(ParseWhere("run_id='0123'")->value), "0123");
  EXPECT_EQ(std::get<std::string>(ParseWhere("lr_rule LIKE 'sq%'")->value), "sq%");
  EXPECT_EQ(WhereSql(*ParseWhere("batch_size>=1024")), "batch_size >= ?");
}

TEST(WhereClauseTest, DottedNamesAreSweptParameters) {
  auto f = ParseWhere("optimizer.momentum >= 0.9");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->is_param);
  EXPECT_EQ(f->column, "optimizer.momentum");
  EXPECT_DOUBLE_EQ(std::get<double>(f->value), 0.9);
  EXPECT_NE(WhereSql(*f).find("EXISTS (SELECT 1 FROM run_params"), std::string::npos);
  EXPECT_EQ(WhereSql(*f).find("optimizer.momentum"), std::string::npos);  // bound, not pasted
  EXPECT_FALSE(ParseWhere("batch_size>=1")->is_param);
}

TEST(WhereClauseTest, UnknownColumnIsNamedWithTheValidOnes) {
  auto f = ParseWhere("batchsize>=1024");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("unknown column 'batchsize'"), std::string::npos);
  EXPECT_NE(f.status().message().find("batch_size"), std::string::npos);  // listed as valid
  EXPECT_NE(f.status().message().find("final_test_accuracy"), std::string::npos);
}

TEST(WhereClauseTest, BadOperatorIsNamedWithTheValidOnes) {
  for (const char* clause : {"batch_size=>1024", "batch_size==1024", "batch_size ~ 3",
                             "batch_size 1024", "lr_rule likes x"}) {
    auto f = ParseWhere(clause);
    ASSERT_FALSE(f.ok()) << clause;
    EXPECT_NE(f.status().message().find("bad operator"), std::string::npos)
        << clause << ": " << f.status().message();
    EXPECT_NE(f.status().message().find("= != < <= > >= like"), std::string::npos);
  }
}

TEST(WhereClauseTest, MissingPartsAreReported) {
  auto no_value = ParseWhere("batch_size>=");
  ASSERT_FALSE(no_value.ok());
  EXPECT_NE(no_value.status().message().find("missing value"), std::string::npos);
  auto nothing = ParseWhere(">=3");
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.status().message().find("column op value"), std::string::npos);
}

TEST(WhereClauseTest, ColumnListsAreChecked) {
  auto cols = ParseColumns("run_id, batch_size,seconds");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(*cols, (std::vector<std::string>{"run_id", "batch_size", "seconds"}));
  auto bad = ParseColumns("run_id,acc");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown column 'acc'"), std::string::npos);
  EXPECT_FALSE(ParseColumns(" , ").ok());
}

TEST(WhereClauseTest, AndOrAndCommasJoinComparisonsAsInSql) {
  // Each of these read as one comparison with the value "256 and nodes=2" (text, which no
  // integer equals): a silent empty result.
  auto both = ParseWhereExpression("batch_size>=256 and nodes=2");
  ASSERT_TRUE(both.ok()) << both.status().message();
  ASSERT_EQ(both->any_of.size(), 1u);
  ASSERT_EQ(both->any_of[0].size(), 2u);
  EXPECT_EQ(both->any_of[0][1].column, "nodes");
  EXPECT_EQ(std::get<int64_t>(both->any_of[0][0].value), 256);
  EXPECT_EQ(WhereSql(*both), "((batch_size >= ? AND nodes = ?))");
  auto commas = ParseWhereExpression("batch_size>=256, nodes=2,lr_rule=linear");
  ASSERT_TRUE(commas.ok()) << commas.status().message();
  EXPECT_EQ(commas->any_of[0].size(), 3u);
  // AND binds tighter than OR.
  auto either = ParseWhereExpression("batch_size=64 OR batch_size>=256 AND nodes=2");
  ASSERT_TRUE(either.ok()) << either.status().message();
  EXPECT_EQ(WhereSql(*either), "((batch_size = ?) OR (batch_size >= ? AND nodes = ?))");
  // Quoted values keep their words and commas.
  auto text = ParseWhereExpression("host = 'a, b and c' or host like \"x or y%\"");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(std::get<std::string>(text->any_of[0][0].value), "a, b and c");
  EXPECT_EQ(std::get<std::string>(text->any_of[1][0].value), "x or y%");
  // A column named like a keyword's neighbour is no keyword.
  EXPECT_TRUE(ParseWhereExpression("ordinal>=2").ok());
}

TEST(WhereClauseTest, ExpressionsThatCouldOnlyMatchNothingAreErrors) {
  struct Case {
    const char* expression;
    const char* says;
  };
  for (const Case& c : {Case{"batch_size>=abc", "'abc' is not a number, and batch_size holds"},
                        Case{"batch_size>=256 nodes=2", "join comparisons with AND, OR"},
                        Case{"batch_size>=256 and", "a comparison is missing"},
                        Case{"and nodes=2", "a comparison is missing"},
                        Case{"batch_size>=256,,nodes=2", "a comparison is missing"},
                        Case{"(batch_size>=256 or nodes=2) and seed=1", "parentheses"},
                        Case{"host='abc", "not closed"},
                        Case{"batch_size>=256 and nodez=2", "unknown column 'nodez'"}}) {
    auto e = ParseWhereExpression(c.expression);
    ASSERT_FALSE(e.ok()) << c.expression;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(c.says), std::string::npos)
        << c.expression << ": " << e.status().message();
    EXPECT_EQ(e.status().message().rfind(std::string("--where '") + c.expression + "'", 0), 0u)
        << e.status().message();
  }
  // Text columns take words; numbers in quotes are text.
  EXPECT_TRUE(ParseWhereExpression("lr_rule=linear").ok());
  EXPECT_TRUE(ParseWhereExpression("run_id='0123'").ok());
}

}  // namespace
}  // namespace batchlab::results
