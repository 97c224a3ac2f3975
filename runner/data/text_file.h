// Byte-level text for a language model: data.name "text". Every byte of data.path is a token
// (vocabulary 256); any file will do.
//
//   corpus    data.path, or the default corpus below when data.path is absent
//   split     the first n - floor(n / 10) bytes train, the last floor(n / 10) bytes are held out
//   samples   windows of context + 1 bytes at a stride of context (consecutive windows share one
//             byte): input = the first context bytes, target = the same window shifted by one.
//             context is the model's (model.context: the parser copies it into
//             DataConfig::context), so the data is cut the way the model reads it.
//   tensors   train_x / test_x [N, context] float32 byte values 0..255 (the model casts them to
//             token ids), train_y / test_y [N, context] int64 next bytes, classes = 256,
//             Dataset::context = context
//
// The default corpus (data.path absent): the Python 3.11 standard library's .py files, the same on
// every Debian 12 machine after scripts/install-deps.sh (packages libpython3.11-minimal and
// libpython3.11-stdlib, pulled in by python3): every regular file *.py under /usr/lib/python3.11,
// except the subtrees dist-packages, site-packages, test, tests, idle_test (other packages, or
// none), distutils, lib2to3, venv, ensurepip, idlelib, tkinter, turtledemo (separate, optional
// Debian packages) and config-3.11-* (libpython3.11-dev); sorted by relative path (byte order),
// concatenated, and cut at kDefaultCorpusBytes = 6,000,000 bytes (of 9,989,587 on Debian
// 12's 3.11.2-6+deb12u6: the first 362 of 508 files, __future__.py .. mimetypes.py and part of
// modulefinder.py).
//
// Bad input is a BadConfig (exit 2) naming the field: a missing, unreadable or empty file
// (data.path), a context longer than a split allows (model.context: each split needs at least
// context + 1 bytes), no context (model.context: the model must have one, e.g. transformer).
//
//   std::string bytes = ReadTextCorpus(config.data);
//   Dataset d = MakeTextDataset(bytes, 64);
#ifndef BATCHLAB_RUNNER_DATA_TEXT_FILE_H_
#define BATCHLAB_RUNNER_DATA_TEXT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runner/data/dataset.h"
#include "runner/config/run_config.h"

namespace batchlab::runner {

inline constexpr const char* kDefaultCorpusDir = "/usr/lib/python3.11";
inline constexpr int64_t kDefaultCorpusBytes = 6000000;
inline constexpr int64_t kTextVocabulary = 256;

// The default corpus's files in order (full paths), before the cut; empty if the folder is absent.
std::vector<std::string> DefaultCorpusFiles();

// The corpus bytes: data.path's whole file, or the default corpus cut at kDefaultCorpusBytes.
std::string ReadTextCorpus(const DataConfig& config);

// The bytes in each split: {train, held_out}, held_out = floor(n / 10).
std::pair<int64_t, int64_t> TextSplit(int64_t bytes);

// Cuts `bytes` into the training and held-out windows (see above).
Dataset MakeTextDataset(const std::string& bytes, int64_t context);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_TEXT_FILE_H_
