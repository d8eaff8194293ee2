#pragma once
/// @file trainer.hpp
/// Data-parallel training on the trainer ranks: deterministic epoch plan, local
/// preprocessing, forward/backward, gradient sum over trainers, SGD, evaluation.

#include <memory>
#include <span>
#include <vector>

#include "conflux/comm/gradient_sync.hpp"
#include "conflux/core/config.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/batch_loader.hpp"
#include "conflux/data/dataset.hpp"
#include "conflux/data/transforms.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/sgd.hpp"
#include "conflux/train/callbacks.hpp"

namespace conflux::train {

/// Where the data service's worker ranks are.
struct DataServiceLink {
  const comm::Communicator* comm = nullptr;  ///< the service communicator; null: no workers
  std::vector<int> worker_ranks;             ///< rank in *comm of each worker
};

/// What a trainer needs besides the config.
struct TrainerSetup {
  const Config& config;
  const comm::Communicator& trainers;  ///< the trainer ranks (this rank is trainers.rank())
  const data::DatasetSplits& data;
  DataServiceLink service = {};  ///< worker ranks to offload preprocessing to
  const Logger* log = nullptr;   ///< for warnings and data-service summaries; null: silent
};

/// Runs training on one trainer rank; all trainer ranks run it together.
class Trainer {
 public:
  /// Builds the model and transforms; InputError when the model or transforms do not fit the
  /// dataset (naming the config key and where it was set).
  explicit Trainer(const TrainerSetup& setup);
  ~Trainer();
  /// Trains for train.epochs epochs, calling `callbacks`; returns the summary.
  TrainSummary run(std::span<TrainingCallback* const> callbacks);
  /// The model (final weights after run()).
  const model::Model& model() const noexcept { return model_; }

 private:
  struct EvalResult {
    double loss = 0;
    double accuracy = 0;
  };
  EvalResult evaluate();
  void check_replicas_agree(const std::string& digest) const;
  std::unique_ptr<data::BatchLoader> make_loader() const;
  void report_data_service(const data::LoaderStats& stats) const;

  const Config& config_;
  const comm::Communicator& trainers_;
  const data::DatasetSplits& data_;
  DataServiceLink service_;
  const Logger* log_;
  data::SampleTransform transform_;
  model::Model model_;
  model::Sgd sgd_;
  std::unique_ptr<comm::GradientSync> sync_;
};

}  // namespace conflux::train
