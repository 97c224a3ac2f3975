// Spec tests: parse `text` and expect INVALID_ARGUMENT whose message contains every `needle`.
//
//   ExpectInvalid(R"({"name": "x", "resources": {"gpus_per_rank": -1}})",
//                 {"resources.gpus_per_rank", ">= 0"});
#ifndef BATCHLAB_TESTS_SUPPORT_EXPECT_INVALID_SPEC_H_
#define BATCHLAB_TESTS_SUPPORT_EXPECT_INVALID_SPEC_H_

#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

inline void ExpectInvalid(const std::string& text, std::initializer_list<std::string> needles) {
  StatusOr<Spec> spec = ParseSpec(text, "t.json");
  ASSERT_FALSE(spec.ok()) << text;
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << spec.status().message();
  for (const auto& n : needles) {
    EXPECT_NE(spec.status().message().find(n), std::string::npos)
        << "message: " << spec.status().message() << "\nexpected to contain: " << n;
  }
}

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_TESTS_SUPPORT_EXPECT_INVALID_SPEC_H_
