#pragma once
/// @file evaluation.hpp
/// Loss and accuracy of a model on a dataset split, sharded over ranks: the per-epoch test of
/// a trainer and `conflux eval` on saved weights, through the same batches and sums.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory_resource>
#include <span>

#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/io/sample_source.hpp"
#include "conflux/data/pipeline/batch.hpp"
#include "conflux/data/transform/transforms.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/tensor.hpp"

namespace conflux::train {

/// One evaluation batch's forward pass (its images as floats, or as 8-bit images when the
/// consumer asked for them): plain cross-entropy sums, no gradients.
using EvalForward = std::function<model::LossResult(const data::Batch&)>;

/// Mean loss and accuracy over the samples that were not skipped as corrupt.
struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  double samples = 0;  ///< evaluated (the split's size less skipped samples)
};

/// Evaluates this rank's contiguous shard of `split` (rank `comm.rank()` of `comm.size()`) with
/// the evaluation transform and sums over `comm`; collective. With `pixel_memory`, batches are
/// 8-bit images in that memory (a GPU trainer normalises them itself, as in training).
EvalResult evaluate_split(const Config& config, const data::SampleSource& split,
                          const data::SampleTransform& transform, const comm::Communicator& comm,
                          const Logger* log, const EvalForward& forward,
                          std::pmr::memory_resource* pixel_memory = nullptr);

/// What `conflux eval` evaluates.
struct EvalJob {
  std::filesystem::path model_file;  ///< weights saved by a run (model.h5)
  bool train_split = false;          ///< the training split instead of the test split
};

/// `conflux eval`: the config's model with the weights of job.model_file, evaluated on the
/// config's dataset by every rank of `world` (each a shard); InputError naming the file when
/// the weights do not fit the model.
EvalResult run_eval_job(const Config& config, const comm::Communicator& world, const Logger& log,
                        const EvalJob& job);

}  // namespace conflux::train
