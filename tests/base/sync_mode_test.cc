// base/sync_mode.h: the one table of sync modes, and the config declaration read from it.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/config_fields.h"
#include "base/sync_mode.h"

namespace batchlab {
namespace {

TEST(SyncModeTableTest, EveryModeHasOneEntryFoundByItsName) {
  std::set<std::string> names;
  for (const SyncModeInfo& m : SyncModes()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    ASSERT_NE(FindSyncMode(m.name), nullptr) << m.name;
    EXPECT_EQ(FindSyncMode(m.name)->mode, m.mode);
    EXPECT_STREQ(SyncModeName(m.mode), m.name);
  }
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(FindSyncMode("ring"), nullptr);
}

TEST(SyncModeTableTest, TheDeclarationAllowsTheTablesNamesAndDefaultsToOne) {
  const config::Field* sync = config::FindField("comm.sync");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->allowed, SyncModeNames());
  ASSERT_TRUE(sync->default_value.has_value());
  EXPECT_NE(FindSyncMode(sync->default_value->get<std::string>()), nullptr);
  for (const SyncModeInfo& m : SyncModes()) {
    EXPECT_NE(sync->meaning.find(m.means), std::string::npos) << m.name;
  }
}

TEST(SyncModeTableTest, MessagesListTheModesWithACapability) {
  EXPECT_EQ(SyncModeNamesWith(&SyncModeInfo::fp16, "and", false), "allreduce and local_sgd");
  EXPECT_EQ(SyncModeNamesWith(&SyncModeInfo::branchable, "or", true),
            "\"allreduce\", \"lag\" or \"local_sgd\"");
  EXPECT_EQ(SyncModeNamesWith(&SyncModeInfo::schedule, "or", true), "\"allreduce\"");
  EXPECT_EQ(SyncModeNamesWith(nullptr, "or", false),
            "allreduce, lag, local_sgd, async_ps or backup");
}

}  // namespace
}  // namespace batchlab
