// Text that goes into the results database is always valid UTF-8: metrics files, runner stderr
// and file names are untrusted bytes (docs/security.md), and readers such as Python's sqlite3
// fail on a TEXT value that is not UTF-8. Statement::BindText passes every value through
// ValidUtf8Text, so no caller can store anything else.
//
//   ValidUtf8Text("loss \xff")  == "loss \\xff"   (each invalid byte as the 4 characters \xNN)
//   ValidUtf8Text("naïve")      == "naïve"        (valid text is returned unchanged)
#ifndef BATCHLAB_RESULTS_UTF8_TEXT_H_
#define BATCHLAB_RESULTS_UTF8_TEXT_H_

#include <string>
#include <string_view>

namespace batchlab::results {

// True if `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF) without NUL bytes.
bool IsValidUtf8Text(std::string_view text);

// `text` with every byte that is not part of a well-formed UTF-8 sequence, and every NUL,
// replaced by the escape `\xNN` (its value in hex).
std::string ValidUtf8Text(std::string_view text);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_UTF8_TEXT_H_
