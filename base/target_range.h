// Whether a target can be met at all, from the range its metric can take: an accuracy is a
// fraction in [0, 1] (`test_accuracy >= 80` is a percent written as a fraction's place), a loss is
// never negative. One rule for `sweep plan` and `sweep run` (exit 2 before anything runs, unless
// --force) and for `analyze --target` (a warning beside the answer).
//
//   UnreachableTarget("test_accuracy", ">=", 80)
//   // {"test_accuracy is a fraction in [0, 1], so no run can meet it", "for 80% write 0.8"}
#ifndef BATCHLAB_BASE_TARGET_RANGE_H_
#define BATCHLAB_BASE_TARGET_RANGE_H_

#include <optional>
#include <string>
#include <string_view>

namespace batchlab {

struct UnreachableWhy {
  std::string why;  // "test_accuracy is a fraction in [0, 1], so no run can meet it"
  std::string fix;  // "for 80% write 0.8"; empty when there is no obvious rewrite
};

// Why `metric op value` can never be met, or nullopt. `metric` ending in "accuracy" is a
// fraction; ending in "loss" is never negative. `op` is one of >= > <= <.
std::optional<UnreachableWhy> UnreachableTarget(std::string_view metric, std::string_view op,
                                                double value);

}  // namespace batchlab

#endif  // BATCHLAB_BASE_TARGET_RANGE_H_
