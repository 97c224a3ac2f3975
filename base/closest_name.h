// "Did you mean ...?" for a mistyped name: the closest of the valid names by edit distance, when
// it is close enough to be a typo. Used by the CLI (subcommands, flags) and the spec checks
// (field names), so every layer suggests the same way.
//
//   DidYouMean("batch_szie", {"batch_size", "nodes"})  // "; did you mean 'batch_size'?"
//   DidYouMean("xyz", {"batch_size", "nodes"})         // ""
#ifndef BATCHLAB_BASE_CLOSEST_NAME_H_
#define BATCHLAB_BASE_CLOSEST_NAME_H_

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab {

// Optimal string alignment distance (insertions, deletions, substitutions and swaps of
// neighbouring characters each cost 1), case-insensitive.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The candidate nearest to `word`, if within a typo's distance: 1 for words of up to 4
// characters, 2 up to 8, else 3; or a candidate that starts with `word` (3+ characters). Ties go
// to the earlier candidate.
inline std::optional<std::string> ClosestName(std::string_view word,
                                              const std::vector<std::string>& candidates) {
  if (word.empty()) return std::nullopt;
  const size_t limit = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    // The lengths alone bound the distance: a long (even hostile) word costs nothing.
    if (c == word || c.size() > word.size() + limit || word.size() > c.size() + limit) continue;
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (best) return best;
  if (word.size() >= 3) {
    for (const std::string& c : candidates) {
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) return c;
    }
  }
  return std::nullopt;
}

// "; did you mean 'NAME'?" for the closest candidate, or "" when none is close.
inline std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> c = ClosestName(word, candidates);
  return c ? "; did you mean '" + *c + "'?" : "";
}

}  // namespace batchlab

#endif  // BATCHLAB_BASE_CLOSEST_NAME_H_
