// Byte-level text (see text_file.h), registered as data.name "text".
#include "runner/data/text_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>
#include <utility>

#include "runner/data/dataset_registry.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;

// Subtrees of /usr/lib/python3.11 that other Debian packages (or none) install.
bool Excluded(const fs::path& relative) {
  static const std::set<std::string> kSkip = {
      "dist-packages", "site-packages", "test",      "tests",   "idle_test", "distutils",
      "lib2to3",       "venv",          "ensurepip", "idlelib", "tkinter",   "turtledemo"};
  bool first = true;
  for (const fs::path& part : relative.parent_path()) {
    const std::string p = part.string();
    if (kSkip.count(p) || (first && p.rfind("config-", 0) == 0)) return true;
    first = false;
  }
  return false;
}

std::string Where(const DataConfig& config) {
  return config.path.empty() ? "the default corpus (" + std::string(kDefaultCorpusDir) + "/*.py)"
                             : "data.path \"" + config.path + "\"";
}

// The corpus size without reading it; throws BadConfig naming data.path.
int64_t CorpusBytes(const DataConfig& config) {
  if (config.path.empty()) {
    int64_t n = 0;
    for (const std::string& f : DefaultCorpusFiles()) {
      std::error_code ec;
      const auto size = fs::file_size(f, ec);
      if (!ec) n += static_cast<int64_t>(size);
      if (n >= kDefaultCorpusBytes) return kDefaultCorpusBytes;
    }
    if (n == 0) {
      throw BadConfig(
          "data.path: not given, and the default corpus (the .py files under " +
          std::string(kDefaultCorpusDir) +
          ") is not installed; install python3 (scripts/install-deps.sh) or give a text file");
    }
    return n;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(config.path, ec);
  if (ec || !fs::exists(st) || !fs::is_regular_file(st) || !std::ifstream(config.path)) {
    throw BadConfig("data.path: \"" + config.path +
                    "\" cannot be opened as a file; data.name \"text\" reads one file of any "
                    "bytes (relative paths are relative to the runner's working directory)");
  }
  const auto size = static_cast<int64_t>(fs::file_size(config.path, ec));
  if (ec || size == 0) {
    throw BadConfig("data.path: \"" + config.path +
                    "\" is empty; a language model needs a text of at least a few bytes");
  }
  return size;
}

void CheckContext(const DataConfig& config, int64_t bytes) {
  if (config.context <= 0) {
    throw BadConfig(
        "model.context: data.name \"text\" is cut into samples of the model's context; choose a "
        "model with a context, e.g. {\"name\": \"transformer\", \"context\": 64, ...}");
  }
  const auto [train, held_out] = TextSplit(bytes);
  if (held_out < config.context + 1) {
    throw BadConfig("model.context: " + std::to_string(config.context) + " is too long for " +
                    Where(config) + ": " + std::to_string(bytes) +
                    " bytes, of which the held-out split (the last 10 %) has " +
                    std::to_string(held_out) +
                    " and each split needs context + 1 = " + std::to_string(config.context + 1) +
                    "; use a smaller model.context or a longer text (data.path)");
  }
  (void)train;  // train >= held_out
}

void CheckText(const DataConfig& config) { CheckContext(config, CorpusBytes(config)); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadConfig("data.path: \"" + path + "\" cannot be opened");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Dataset LoadText(const DataConfig& config) {
  const std::string bytes = ReadTextCorpus(config);
  if (bytes.empty()) throw BadConfig("data.path: \"" + config.path + "\" is empty");
  CheckContext(config, static_cast<int64_t>(bytes.size()));
  return MakeTextDataset(bytes, config.context);
}

// Windows of context + 1 bytes at stride context over bytes[begin, begin + length).
void Cut(const std::string& bytes, int64_t begin, int64_t length, int64_t context, torch::Tensor& x,
         torch::Tensor& y) {
  const int64_t n = (length - 1) / context;
  x = torch::empty({n, context}, torch::kFloat32);
  y = torch::empty({n, context}, torch::kInt64);
  float* xp = x.data_ptr<float>();
  int64_t* yp = y.data_ptr<int64_t>();
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data()) + begin;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < context; ++t) {
      xp[i * context + t] = static_cast<float>(b[i * context + t]);
      yp[i * context + t] = static_cast<int64_t>(b[i * context + t + 1]);
    }
  }
}

}  // namespace

std::vector<std::string> DefaultCorpusFiles() {
  std::vector<std::string> relative;
  std::error_code ec;
  const fs::path root(kDefaultCorpusDir);
  if (!fs::is_directory(root, ec)) return {};
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(root);
    if (it->is_directory(ec)) {
      if (Excluded(rel / "x")) it.disable_recursion_pending();
      continue;
    }
    if (rel.extension() != ".py" || !it->is_regular_file(ec) || Excluded(rel)) continue;
    relative.push_back(rel.string());
  }
  std::sort(relative.begin(), relative.end());  // std::string: byte order
  std::vector<std::string> files;
  files.reserve(relative.size());
  for (const std::string& r : relative) files.push_back((root / r).string());
  return files;
}

std::string ReadTextCorpus(const DataConfig& config) {
  if (!config.path.empty()) {
    CorpusBytes(config);  // the file's checks
    return ReadFile(config.path);
  }
  std::string out;
  out.reserve(static_cast<size_t>(kDefaultCorpusBytes));
  for (const std::string& f : DefaultCorpusFiles()) {
    out += ReadFile(f);
    if (static_cast<int64_t>(out.size()) >= kDefaultCorpusBytes) {
      out.resize(static_cast<size_t>(kDefaultCorpusBytes));
      break;
    }
  }
  if (out.empty()) CorpusBytes(config);  // throws: not installed
  return out;
}

std::pair<int64_t, int64_t> TextSplit(int64_t bytes) {
  const int64_t held_out = bytes / 10;
  return {bytes - held_out, held_out};
}

Dataset MakeTextDataset(const std::string& bytes, int64_t context) {
  const auto [train, held_out] = TextSplit(static_cast<int64_t>(bytes.size()));
  if (context < 1 || held_out < context + 1) {
    throw BadConfig("model.context: " + std::to_string(context) + " is too long for a text of " +
                    std::to_string(bytes.size()) + " bytes (data.path)");
  }
  Dataset d;
  d.name = "text";
  Cut(bytes, 0, train, context, d.train_x, d.train_y);
  Cut(bytes, train, held_out, context, d.test_x, d.test_y);
  d.classes = kTextVocabulary;
  d.context = context;
  return d;
}

namespace {

[[maybe_unused]] const bool registered_text_file = RegisterDataset(
    {"text",
     "bytes of data.path (default: the Python 3.11 standard library's .py files, 6 MB) as tokens "
     "for a language model: windows of model.context + 1 bytes, the last 10 % held out",
     LoadText, CheckText});

}  // namespace

}  // namespace batchlab::runner
