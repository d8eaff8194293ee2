// conflux: the command-line entry point. Parses arguments, dispatches to a subcommand, and
// maps errors to the documented exit codes (0 ok, 2 bad input, 3 runtime failure).

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <strings.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "command_line.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/ckpt/stop_signals.hpp"
#include "conflux/comm/agreement.hpp"
#include "conflux/comm/communicator.hpp"
#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/config/identity.hpp"
#include "conflux/config/schema.hpp"
#include "conflux/core/log.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/hdf5_dataset.hpp"
#include "conflux/train/evaluation.hpp"
#include "conflux/train/model_budget.hpp"
#include "conflux/train/train_job.hpp"
#include "export_command.hpp"
#include "pack_command.hpp"
#include "plan_commands.hpp"
#include "report_command.hpp"
#include "version.hpp"
#include "weights_options.hpp"

namespace po = boost::program_options;
using namespace conflux;

namespace {

constexpr const char* kUsage = R"(conflux: distributed training with an integrated data service

Usage:
  mpirun -np N conflux train --config FILE [--set KEY=VALUE]... [--resume auto|none|FILE]
  srun -n N conflux train --config FILE [--set KEY=VALUE]... [--resume auto|none|FILE]
  conflux config check --config FILE [--set KEY=VALUE]...   validate; print the resolved config
  conflux config reference                                   every config key, as Markdown
  conflux data convert --dataset NAME --output FILE.h5 [--data-dir DIR]
  conflux data info FILE.h5                                  describe a converted dataset
  conflux data pack --dataset image-folder --path ROOT --out DIR   pack your images
  conflux ckpt inspect FILE.h5                               show what a checkpoint holds
  conflux ckpt verify FILE.h5...                             check checkpoints are intact
  mpirun -np N conflux profile --config FILE --workers 1,2 --memory 512,1024 --batch 32,64
                               --output PROFILE.toml       measure under Lambda-like limits
  conflux fit --profile PROFILE.toml... --output MODEL.toml  fit T_train, T_trans, sync
  conflux predict --model MODEL.toml --config FILE           predicted epoch time of a config
  conflux plan --model MODEL.toml --config FILE --deadline S cheapest config meeting S seconds
  conflux report RUN_DIR [--output DIR]                      HTML page + plots of a run
  [mpirun -np N] conflux eval --model FILE.h5 --config FILE [--set KEY=VALUE]... [--split S]
                               loss and accuracy of saved weights on the config's dataset
  conflux export --model FILE.h5 --config FILE --output MODEL.onnx [--test-samples N]
                               the weights as an ONNX model, with an ONNX test data set
  conflux help | --help | --version                          (every command takes --help)

Ranks 0..trainers-1 train ([cluster] trainers in the config); the others are preprocessing
workers. SIGUSR1, SIGTERM or SIGINT make `train` checkpoint at the next step and exit 75.
Exit codes: 0 success, 2 bad input (config, command line, data files, corrupt checkpoint),
3 runtime failure, 4 run directory in use by another job, 75 checkpointed on a signal
(requeue me).
Data: data.dir, else $CONFLUX_DATA, else )" CONFLUX_USER_DATA_DIR R"(.
)";

// Usage of the commands whose actions take positional arguments (the others print their
// option parser's help).
constexpr const char* kConfigUsage = R"(Usage:
  conflux config check --config FILE [--set KEY=VALUE]...   validate; print the resolved config
  conflux config reference                                   every config key, as Markdown
`conflux config check --help` lists check's options.
)";
constexpr const char* kDataUsage = R"(Usage:
  conflux data convert --dataset NAME --output FILE.h5 [--data-dir DIR]
                                     copy mnist, fashion-mnist or cifar10 into one HDF5 file
  conflux data info FILE.h5          describe a converted dataset (shapes, classes, sources)
  conflux data pack --dataset image-folder --path ROOT --out DIR [--splits train,val]
                    [--shard-mb N]   pack an image folder into HDF5 shards
`conflux data convert --help` and `conflux data pack --help` list their options.
)";
constexpr const char* kCkptUsage = R"(Usage:
  conflux ckpt inspect FILE.h5       show what a checkpoint holds
  conflux ckpt verify FILE.h5...     check checkpoints are intact (exit 2 if one is not)
)";

// Whether `args` ask for help (--help or -h anywhere).
bool asks_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

// Options shared by `train` and `config check`.
struct ConfigArgs {
  std::string path;
  std::vector<std::string> overrides;
};

ConfigArgs parse_config_args(const std::vector<std::string>& args, const char* command) {
  ConfigArgs out;
  std::string resume;
  po::options_description options(fmt::format("conflux {} options", command));
  options.add_options()("help,h", "show this help")("config,c", po::value(&out.path)->required(),
                                                    "TOML experiment config")(
      "set,s", po::value(&out.overrides)->composing(),
      "override a config key, e.g. --set train.lr=0.1 (repeatable)")(
      "resume,r", po::value(&resume),
      "auto (newest valid checkpoint, else from scratch), none, or a checkpoint file; the same "
      "as --set checkpoint.resume=...");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  if (vm.count("help")) {
    std::cout << options;
    std::exit(0);
  }
  po::notify(vm);
  if (vm.count("resume")) out.overrides.push_back("checkpoint.resume=\"" + resume + "\"");
  return out;
}

ConfigSources sources_for(const ConfigArgs& args, std::string launch_time) {
  return environment_sources(args.overrides, std::move(launch_time));
}

// A rank whose launcher (mpirun, orted, slurmstepd) died is an orphan: nobody reads its output
// and a relaunch would meet it, so the kernel ends it at once (SIGKILL: the last durable
// checkpoint stays good, and the next publish removes a half-written temp file).
void end_with_launcher() {
  const pid_t launcher = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) std::_Exit(static_cast<int>(ExitCode::kRuntime));  // died already
}

// Says once (rank 0) when the model digest is not portable (docs/design.md invariant 8).
void log_blas_pin(const Logger& log) {
  const BlasPin pin = current_blas_pin();
  if (!pin.note.empty()) {
    if (pin.state == BlasPin::State::kCpuLacksAvx2) {
      log.warn("{}", pin.note);
    } else {
      log.info("{}", pin.note);
    }
  } else if (const std::string core = cli::blas_core_name();
             pin.state == BlasPin::State::kPinned &&
             ::strcasecmp(core.c_str(), kPinnedBlasCore) != 0) {
    // An OpenBLAS built for one CPU (without DYNAMIC_ARCH) ignores OPENBLAS_CORETYPE.
    log.warn(
        "OpenBLAS runs its {} kernels, not {} as OPENBLAS_CORETYPE asks (an OpenBLAS built "
        "without DYNAMIC_ARCH?): the model digest may differ on another CPU model",
        core, kPinnedBlasCore);
  }
}

// Runs `body(config, world, log, env)` on every rank of an MPI job with the config loaded and
// agreed, mapping failures to exit codes the same way on every rank.
template <typename Body>
int run_mpi_command(int argc, char** argv, const ConfigArgs& config_args, Body body) {
  end_with_launcher();
  comm::MpiEnvironment env(argc, argv);
  const Logger log(env.world_rank());
  try {
    const auto world = comm::Communicator::world();
    if (world.rank() == 0) log_blas_pin(log);
    const std::string stamp =
        world.broadcast(world.rank() == 0 ? local_time("%Y%m%d-%H%M%S") : "", 0);
    std::optional<Config> config;
    comm::run_agreed(world, "loading the config", [&] {
      config.emplace(load_config_file(config_args.path, sources_for(config_args, stamp)));
    });
    comm::agree_with_root(world, "config", rank_invariant_values(*config),
                          "every rank must run the same config file and --set options");
    return body(*config, world, log, env);
  } catch (const comm::AgreedFailure& e) {
    // Every rank knows: report and leave through MPI_Finalize with the agreed code.
    log.error("{}", e.describe());
    return static_cast<int>(e.code());
  } catch (const Error& e) {
    log.error("{}", e.describe());
    env.abort(static_cast<int>(e.code()));
  } catch (const std::bad_alloc& e) {
    log.error(
        "rank {}: out of memory while running the job ({}); give the rank more memory "
        "(the node's, or limits.memory_mb) or make the job smaller",
        env.world_rank(), e.what());
    env.abort(static_cast<int>(ExitCode::kRuntime));
  } catch (const std::exception& e) {
    log.error("rank {}: unexpected: {}", env.world_rank(), e.what());
    env.abort(static_cast<int>(ExitCode::kRuntime));
  }
}

int cmd_train(int argc, char** argv, const std::vector<std::string>& args) {
  const ConfigArgs config_args = parse_config_args(args, "train");
  // Watched from before MPI starts until the process exits: a stop signal during start-up or
  // shutdown must not kill a rank (docs/checkpoints.md, "Stop signals").
  const ckpt::StopSignals signals(ckpt::StopSignals::AtEnd::kIgnore);
  return run_mpi_command(argc, argv, config_args,
                         [&](const Config& config, const comm::Communicator& world,
                             const Logger& log, const comm::MpiEnvironment& env) {
                           const train::JobEnd end =
                               train::run_train_job(config, world, log, &signals);
                           // A worker that stopped answering would never join MPI_Finalize: end
                           // every rank now.
                           if (end.leave_lost_workers) {
                             std::fflush(nullptr);  // the digest line must not die in a buffer
                             env.abort(static_cast<int>(end.code));
                           }
                           return static_cast<int>(end.code);
                         });
}

int cmd_eval(int argc, char** argv, const std::vector<std::string>& args) {
  cli::WeightsOptions weights;
  std::string split = "test";
  po::options_description options("conflux eval options");
  options.add_options()("help,h", "show this help");
  cli::add_weights_options(options, weights);
  options.add_options()("split", po::value(&split), "test (default) or train");
  if (!cli::parse_options(args, options)) return 0;
  CONFLUX_REQUIRE(split == "test" || split == "train",
                  "conflux eval: --split must be test or train, not '{}'", split);
  const train::EvalJob job{.model_file = weights.model_file, .train_split = split == "train"};
  const ConfigArgs config_args{weights.config_path, weights.overrides};
  return run_mpi_command(argc, argv, config_args,
                         [&](const Config& config, const comm::Communicator& world,
                             const Logger& log, const comm::MpiEnvironment&) {
                           const train::EvalResult r = train::run_eval_job(config, world, log, job);
                           if (world.rank() == 0) {
                             fmt::print(
                                 "eval: {} split, {} samples: loss {:.4f}, accuracy "
                                 "{:.2f}%\n",
                                 split, r.samples, r.loss, 100.0 * r.accuracy);
                           }
                           return 0;
                         });
}

int cmd_profile(int argc, char** argv, const std::vector<std::string>& args) {
  const cli::ProfileArgs profile_args = cli::parse_profile_args(args);
  return run_mpi_command(argc, argv, ConfigArgs{profile_args.config, profile_args.overrides},
                         [&](const Config& config, const comm::Communicator& world,
                             const Logger& log, const comm::MpiEnvironment&) {
                           return cli::run_profile(profile_args, config, world, log);
                         });
}

int cmd_config(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] != "check" && asks_help(args)) {
    std::cout << kConfigUsage;
    return 0;
  }
  if (args.empty()) CONFLUX_INPUT_ERROR("conflux config: expected 'check' or 'reference'");
  if (args[0] == "reference") {
    std::cout << config_reference_markdown();
    return 0;
  }
  if (args[0] != "check") {
    CONFLUX_INPUT_ERROR("conflux config: unknown action '{}' (expected check or reference)",
                        args[0]);
  }
  const ConfigArgs config_args = parse_config_args({args.begin() + 1, args.end()}, "config check");
  const Config config =
      load_config_file(config_args.path, sources_for(config_args, local_time("%Y%m%d-%H%M%S")));
  // What train would find only at start-up: a model that does not fit the data or memory.
  train::check_model_memory(config, train::expected_model_input(config));
  std::cout << config.resolved_toml();
  return 0;
}

int cmd_data(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] != "convert" && args[0] != "pack" && asks_help(args)) {
    std::cout << kDataUsage;
    return 0;
  }
  if (args.empty()) CONFLUX_INPUT_ERROR("conflux data: expected 'convert', 'info' or 'pack'");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "pack") return cli::cmd_data_pack(rest);
  if (args[0] == "info") {
    if (rest.size() != 1) CONFLUX_INPUT_ERROR("usage: conflux data info FILE.h5");
    const auto splits = data::read_hdf5_dataset(rest[0]);
    for (const auto* split : {&splits.train, &splits.test}) {
      fmt::print("{} {}: {} samples of {}x{}x{}, {} classes\n", split->name,
                 split == &splits.train ? "train" : "test", split->size(), split->shape.channels,
                 split->shape.height, split->shape.width, split->num_classes);
    }
    for (const auto& src : splits.train.sources) fmt::print("  {}  {}\n", src.sha256, src.name);
    for (const auto& src : splits.test.sources) fmt::print("  {}  {}\n", src.sha256, src.name);
    return 0;
  }
  if (args[0] != "convert") {
    CONFLUX_INPUT_ERROR("conflux data: unknown action '{}' (expected convert, info or pack)",
                        args[0]);
  }
  std::string dataset, output, data_dir = environment_data_dir();
  po::options_description options("conflux data convert options");
  options.add_options()("help,h", "show this help")("dataset", po::value(&dataset)->required(),
                                                    "mnist | fashion-mnist | cifar10")(
      "output,o", po::value(&output)->required(), "HDF5 file to write")(
      "data-dir", po::value(&data_dir), "directory with the original files");
  po::variables_map vm;
  po::store(po::command_line_parser(rest).options(options).run(), vm);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  po::notify(vm);
  const auto splits = data::load_dataset(dataset, data_dir);
  data::write_hdf5_dataset(output, splits);
  fmt::print("wrote {} ({} train + {} test samples)\n", output, splits.train.size(),
             splits.test.size());
  return 0;
}

int cmd_ckpt(const std::vector<std::string>& args) {
  if (asks_help(args)) {
    std::cout << kCkptUsage;
    return 0;
  }
  if (args.size() < 2 || (args[0] != "inspect" && args[0] != "verify")) {
    CONFLUX_INPUT_ERROR("usage: conflux ckpt inspect FILE.h5 | conflux ckpt verify FILE.h5...");
  }
  if (args[0] == "inspect") {
    if (args.size() != 2) CONFLUX_INPUT_ERROR("usage: conflux ckpt inspect FILE.h5");
    std::cout << ckpt::describe_checkpoint(args[1]);
    return 0;
  }
  const Logger log;
  int code = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    try {
      const ckpt::TrainingState s = ckpt::read_checkpoint(args[i]);
      fmt::print("ok {}: epoch {} step {}/{} (global step {}), {} parameters, checksum verified\n",
                 args[i], s.epoch, s.step, s.steps_per_epoch, s.global_step, s.params.size());
    } catch (const ckpt::CorruptCheckpoint& e) {
      log.error("{}", e.what());
      code = static_cast<int>(e.code());
    }
  }
  return code;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return static_cast<int>(ExitCode::kBadInput);
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::cout << cli::version_text();
    return 0;
  }
  if (command == "train") return cmd_train(argc, argv, args);
  if (command == "config") return cmd_config(args);
  if (command == "data") return cmd_data(args);
  if (command == "ckpt") return cmd_ckpt(args);
  if (command == "profile") return cmd_profile(argc, argv, args);
  if (command == "eval") return cmd_eval(argc, argv, args);
  if (command == "export") return cli::cmd_export(args);
  if (command == "fit") return cli::cmd_fit(args);
  if (command == "report") return cli::cmd_report(args);
  const ConfigSources sources = environment_sources({}, local_time("%Y%m%d-%H%M%S"));
  if (command == "predict") return cli::cmd_predict(args, sources);
  if (command == "plan") return cli::cmd_plan(args, sources);
  CONFLUX_INPUT_ERROR("unknown command '{}'; run 'conflux help'", command);
}

}  // namespace

int main(int argc, char** argv) {
  const Logger log;
  try {
    // Before MPI and before any thread: OpenBLAS chose its kernels when it loaded.
    pin_blas_kernels(argv);
    return dispatch(argc, argv);
  } catch (const Error& e) {
    log.error("{}", e.describe());
    return static_cast<int>(e.code());
  } catch (const po::error& e) {
    log.error("{} (see --help)", e.what());
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const std::exception& e) {
    log.error("unexpected: {}", e.what());
    return static_cast<int>(ExitCode::kRuntime);
  }
}
