// Adding seeds or axis values extends a study; any other change needs a new version.
#include "orchestrator/spec/spec_extension.h"

#include <gtest/gtest.h>

namespace batchlab::orchestrator {
namespace {

using json = nlohmann::json;

json Base() {
  return json::parse(R"({"name":"s","base":{"lr":{"base":0.1}},
    "axes":{"batch_size":[64,256],"nodes":[1,2]},"seeds":[1]})");
}

TEST(SpecExtensionTest, IdenticalSpecsAreTheSame) {
  EXPECT_EQ(CompareSpecs(Base(), Base()).kind, SpecChange::kSame);
}

TEST(SpecExtensionTest, MoreSeedsAndAxisValuesExtend) {
  json now = Base();
  now["seeds"] = {1, 2};
  now["axes"]["batch_size"] = {64, 256, 1024};
  const SpecChange c = CompareSpecs(Base(), now);
  EXPECT_EQ(c.kind, SpecChange::kExtended);
  EXPECT_NE(c.detail.find("seeds [2]"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("axes.batch_size [1024]"), std::string::npos) << c.detail;
  // repeats written instead of seeds: the same seeds compare equal, more of them extend.
  json rep = Base();
  rep.erase("seeds");
  rep["repeats"] = 3;
  EXPECT_EQ(CompareSpecs(Base(), rep).kind, SpecChange::kExtended);
}

TEST(SpecExtensionTest, ExecutionFieldsDoNotChangeTheStudy) {
  json now = Base();
  now["description"] = "more text";
  now["resources"] = {{"retries", 3}};
  EXPECT_EQ(CompareSpecs(Base(), now).kind, SpecChange::kSame);
}

TEST(SpecExtensionTest, ChangesNameTheField) {
  json base = Base();
  base["base"]["lr"]["base"] = 0.2;
  SpecChange c = CompareSpecs(Base(), base);
  EXPECT_EQ(c.kind, SpecChange::kChanged);
  EXPECT_NE(c.detail.find("base.lr.base"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("0.1 -> 0.2"), std::string::npos) << c.detail;

  json fewer = Base();
  fewer["axes"]["nodes"] = {1};
  c = CompareSpecs(Base(), fewer);
  EXPECT_EQ(c.kind, SpecChange::kChanged);
  EXPECT_NE(c.detail.find("axes.nodes"), std::string::npos) << c.detail;

  json new_axis = Base();
  new_axis["axes"]["lr.rule"] = {"none"};
  EXPECT_EQ(CompareSpecs(Base(), new_axis).kind, SpecChange::kChanged);

  json dropped_seed = Base();
  dropped_seed["seeds"] = {2};
  EXPECT_EQ(CompareSpecs(Base(), dropped_seed).kind, SpecChange::kChanged);
}

TEST(SpecExtensionTest, ZipGroupsExtendByTuples) {
  json a = json::parse(R"({"name":"z","zip":[{"batch_size":[64,256],"lr.base":[0.1,0.2]}]})");
  json b = a;
  b["zip"][0]["batch_size"].push_back(1024);
  b["zip"][0]["lr.base"].push_back(0.4);
  const SpecChange c = CompareSpecs(a, b);
  EXPECT_EQ(c.kind, SpecChange::kExtended) << c.detail;
  json d = a;
  d["zip"][0]["lr.base"][1] = 0.3;  // the B=256 tuple changed
  EXPECT_EQ(CompareSpecs(a, d).kind, SpecChange::kChanged);
}

}  // namespace
}  // namespace batchlab::orchestrator
