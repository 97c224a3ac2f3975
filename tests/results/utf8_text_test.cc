// Text stored in the database is valid UTF-8: validation by the Unicode table of well-formed
// sequences, and escaping of every other byte.
#include "results/utf8_text.h"

#include <gtest/gtest.h>

#include <string>

namespace batchlab::results {
namespace {

TEST(Utf8TextTest, ValidTextIsUnchanged) {
  for (const std::string s : {"", "plain ascii", "naïve café", "日本語", "emoji \xF0\x9F\x98\x80",
                              "\xED\x9F\xBF", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_TRUE(IsValidUtf8Text(s)) << s;
    EXPECT_EQ(ValidUtf8Text(s), s);
  }
}

TEST(Utf8TextTest, EveryIllFormedByteIsEscaped) {
  struct Case {
    std::string in, out;
  };
  for (const Case& c : {
           Case{"\xff", "\\xff"},
           Case{std::string("a\0b", 3), "a\\x00b"},               // NUL
           Case{"\xC0\xAF", "\\xc0\\xaf"},                        // overlong '/'
           Case{"\xED\xA0\x80", "\\xed\\xa0\\x80"},               // surrogate U+D800
           Case{"\xF4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},      // past U+10FFFF
           Case{"\xE6\x97", "\\xe6\\x97"},                        // truncated sequence
           Case{"ok \xC3\x28 \xC3\xA9", "ok \\xc3( \xC3\xA9"},    // bad continuation, then valid
       }) {
    EXPECT_FALSE(IsValidUtf8Text(c.in));
    const std::string out = ValidUtf8Text(c.in);
    EXPECT_EQ(out, c.out);
    EXPECT_TRUE(IsValidUtf8Text(out));
  }
}

}  // namespace
}  // namespace batchlab::results
