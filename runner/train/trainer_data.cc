// Where the trainer's data lives and how a step's batch is gathered (see trainer.h): the data set
// on the CUDA device when it fits, else on the host with pinned staging buffers; a step's rows
// from the sampler (shard_sampler.h) into the batch buffers, sized for the step's local batch.
#include <initializer_list>
#include <vector>

#include "runner/config/device.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {

void Trainer::SizeBatchBuffers(int64_t local) {
  std::vector<int64_t> x_shape = {local, data_.features()};
  std::vector<int64_t> y_shape = data_.train_y.sizes().vec();
  y_shape[0] = local;
  batch_x_ = torch::empty(x_shape, data_.train_x.options().device(device_));
  batch_y_ = torch::empty(y_shape, data_.train_y.options().device(device_));
  // Gathered where the training set lives: on the device, or (too large for it) on the host, in
  // pinned memory, then copied without blocking.
  const bool pinned = device_.is_cuda() && !data_on_device_;
  const torch::Device gather_device = data_on_device_ ? device_ : torch::Device(torch::kCPU);
  if (data_.train_pixels.defined()) {
    batch_pixels_ = torch::empty(x_shape, torch::TensorOptions(torch::kUInt8)
                                              .device(gather_device)
                                              .pinned_memory(pinned));
  }
  if (pinned) {
    host_x_ = torch::empty(x_shape, data_.train_x.options().pinned_memory(true));
    host_y_ = torch::empty(y_shape, data_.train_y.options().pinned_memory(true));
  }
  if (data_on_device_) {
    // A step's row indices go up through a pinned buffer without blocking (a pageable copy
    // would wait for the previous step's kernels).
    rows_host_ = torch::empty({local}, torch::TensorOptions(torch::kInt64).pinned_memory(true));
    rows_device_ = torch::empty({local}, torch::TensorOptions(torch::kInt64).device(device_));
  }
}

void Trainer::PlaceData() {
  train_x_ = data_.train_x;
  train_y_ = data_.train_y;
  train_pixels_ = data_.train_pixels;
  test_x_ = data_.test_x;
  test_y_ = data_.test_y;
  if (!device_.is_cuda()) return;
  // The training rows as the trainer gathers them (the bytes of an image set, else the floats).
  const torch::Tensor& rows = train_pixels_.defined() ? train_pixels_ : train_x_;
  int64_t bytes = 0;
  const std::initializer_list<const torch::Tensor*> resident = {&rows, &train_y_, &test_x_,
                                                                &test_y_};
  for (const torch::Tensor* t : resident) {
    bytes += t->numel() * static_cast<int64_t>(t->element_size());
  }
  data_on_device_ = FitsOnDevice(device_, bytes);
  if (data_on_device_) {  // copied once; every step gathers on the device
    if (train_pixels_.defined()) {
      train_pixels_ = train_pixels_.to(device_);
    } else {
      train_x_ = train_x_.to(device_);
    }
    train_y_ = train_y_.to(device_);
    test_x_ = test_x_.to(device_);  // read in chunks by every evaluation
    test_y_ = test_y_.to(device_);
  }
}

void Trainer::GatherBatch() {
  torch::Tensor rows = sampler_->Next();
  if (data_on_device_) {
    rows_host_.copy_(rows);  // the previous step's copy is done: its loss was read since
    rows_device_.copy_(rows_host_, /*non_blocking=*/true);
    rows = rows_device_;
  }
  if (host_x_.defined()) {  // a CUDA rank whose training set stayed on the host
    if (train_pixels_.defined()) {
      torch::index_select_out(batch_pixels_, train_pixels_, 0, rows);  // pinned
      PixelsToFloat(batch_pixels_.to(device_, /*non_blocking=*/true), batch_x_);
    } else {
      torch::index_select_out(host_x_, train_x_, 0, rows);
      batch_x_.copy_(host_x_, /*non_blocking=*/true);
    }
    torch::index_select_out(host_y_, train_y_, 0, rows);
    batch_y_.copy_(host_y_, /*non_blocking=*/true);
    return;
  }
  if (train_pixels_.defined()) {  // the same values, from a quarter of the memory
    torch::index_select_out(batch_pixels_, train_pixels_, 0, rows);
    PixelsToFloat(batch_pixels_, batch_x_);
  } else {
    torch::index_select_out(batch_x_, train_x_, 0, rows);
  }
  torch::index_select_out(batch_y_, train_y_, 0, rows);
}

}  // namespace batchlab::runner
