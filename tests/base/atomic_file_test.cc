// WriteFileAtomically (base/atomic_file.h): the reader sees the old content or the new, and no
// temporary is left behind, with each way of naming the temporary and with durability.
#include "base/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab {
namespace {

using ::batchlab::testing::ReadFileText;

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

AtomicWrite Unique() {
  AtomicWrite how;
  how.unique_temp = true;
  return how;
}

AtomicWrite Durable() {
  AtomicWrite how;
  how.durable = true;
  return how;
}

TEST(AtomicFileTest, EveryWayWritesTheContentAndLeavesNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir.File("f");
  ASSERT_TRUE(WriteFileAtomically(path, "one").ok());
  EXPECT_EQ(ReadFileText(path), "one");
  ASSERT_TRUE(WriteFileAtomically(path, "two", Unique()).ok());
  EXPECT_EQ(ReadFileText(path), "two");
  ASSERT_TRUE(WriteFileAtomically(path, "three", Durable()).ok());
  EXPECT_EQ(ReadFileText(path), "three");
  const std::string big(1 << 20, 'x');
  ASSERT_TRUE(WriteFileAtomically(
                  path,
                  [&](std::FILE* f) {
                    std::fwrite(big.data(), 1, big.size(), f);
                    return OkStatus();
                  },
                  Durable())
                  .ok());
  EXPECT_EQ(ReadFileText(path), big);
  EXPECT_EQ(Names(dir.path()), std::set<std::string>{"f"});
}

TEST(AtomicFileTest, AFailedWriteKeepsTheOldContentAndRemovesItsTemporary) {
  testing::TempDir dir;
  const std::string path = dir.File("f");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  for (const AtomicWrite& how : {AtomicWrite(), Unique(), Durable()}) {
    const Status s = WriteFileAtomically(
        path,
        [](std::FILE* f) {
          std::fputs("half", f);
          return InternalError("the writer gave up");
        },
        how);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_EQ(s.message(), "the writer gave up");
    EXPECT_EQ(ReadFileText(path), "old");
    EXPECT_EQ(Names(dir.path()), std::set<std::string>{"f"});
  }
}

TEST(AtomicFileTest, AUniqueTemporaryNeverTakesAnotherWritersTemporary) {
  testing::TempDir dir;
  const std::string path = dir.File("f");
  // Another process's write in progress, through the shared name.
  std::ofstream(path + ".tmp") << "someone else's";
  ASSERT_TRUE(WriteFileAtomically(path, "mine", Unique()).ok());
  EXPECT_EQ(ReadFileText(path), "mine");
  EXPECT_EQ(ReadFileText(path + ".tmp"), "someone else's");
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"f", "f.tmp"}));
}

TEST(AtomicFileTest, NoFolderIsAFailedPreconditionNamingTheTemporary) {
  testing::TempDir dir;
  const std::string path = dir.File("missing/f");
  for (const AtomicWrite& how : {AtomicWrite(), Unique(), Durable()}) {
    const Status s = WriteFileAtomically(path, "x", how);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("cannot create " + path + ".tmp"), std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace batchlab
