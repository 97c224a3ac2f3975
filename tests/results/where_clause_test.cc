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

}  // namespace
}  // namespace batchlab::results
