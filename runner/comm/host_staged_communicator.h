// A communicator for CUDA tensors over a backend that reduces host memory (mpi, gloo): each call
// copies the device tensor to the host, runs the backend's call on that copy, and copies the
// result back when the work is waited for. nccl reduces device buffers in place and needs none
// of this (main.cc wraps only the others, and only for a rank on a CUDA device). Host tensors
// pass through untouched, so the CPU path is the wrapped backend's own.
//
//   comm = StageDeviceTensorsOnHost(std::move(comm));   // comm->backend() is still "mpi"
#ifndef BATCHLAB_RUNNER_COMM_HOST_STAGED_COMMUNICATOR_H_
#define BATCHLAB_RUNNER_COMM_HOST_STAGED_COMMUNICATOR_H_

#include <memory>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

std::unique_ptr<Communicator> StageDeviceTensorsOnHost(std::unique_ptr<Communicator> inner);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_COMM_HOST_STAGED_COMMUNICATOR_H_
