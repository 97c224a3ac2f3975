// Reads one IDX file (the MNIST / Fashion-MNIST format: big-endian magic with type and rank,
// then the dimensions, then the raw values), gzip-compressed or not, decompressed in-process
// with zlib. Only the unsigned-byte type (0x08) is supported, which is what image sets use.
//
//   torch::Tensor images = ReadIdxFile(dir + "/train-images-idx3-ubyte.gz");  // uint8 [N, 28, 28]
//   torch::Tensor labels = ReadIdxFile(dir + "/train-labels-idx1-ubyte.gz");  // uint8 [N]
//
// Throws RunnerError kData naming the file for a missing, truncated or malformed file.
#ifndef BATCHLAB_RUNNER_DATA_IDX_FILE_H_
#define BATCHLAB_RUNNER_DATA_IDX_FILE_H_

#include <string>

#include <torch/torch.h>

namespace batchlab::runner {

torch::Tensor ReadIdxFile(const std::string& path);

// `stem` plus ".gz" if that file exists, else `stem` if it exists, else "" (not found).
std::string FindIdxFile(const std::string& stem);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_IDX_FILE_H_
