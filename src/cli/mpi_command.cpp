#include "mpi_command.hpp"

#include <boost/program_options.hpp>

#include <strings.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "conflux/comm/agreement.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/config/identity.hpp"
#include "version.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

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
  } else if (const std::string core = blas_core_name();
             pin.state == BlasPin::State::kPinned &&
             ::strcasecmp(core.c_str(), kPinnedBlasCore) != 0) {
    // An OpenBLAS built for one CPU (without DYNAMIC_ARCH) ignores OPENBLAS_CORETYPE.
    log.warn(
        "OpenBLAS runs its {} kernels, not {} as OPENBLAS_CORETYPE asks (an OpenBLAS built "
        "without DYNAMIC_ARCH?): the model digest may differ on another CPU model",
        core, kPinnedBlasCore);
  }
}

}  // namespace

std::optional<ConfigArgs> parse_config_args(const Invocation& inv) {
  ConfigArgs out;
  std::optional<std::string> resume;
  po::options_description options(command_words(inv.command) + " options");
  options.add_options()("help,h", "show this help")("config,c", po::value(&out.path)->required(),
                                                    "TOML experiment config")(
      "set,s", po::value(&out.overrides)->composing(),
      "override a config key, e.g. --set train.lr=0.1 (repeatable)")(
      "resume,r", po::value<std::string>()->notifier([&](const std::string& v) { resume = v; }),
      "auto (newest valid checkpoint, else from scratch), none, or a checkpoint file; the same "
      "as --set checkpoint.resume=...");
  if (!parse_options(inv, options)) return std::nullopt;
  if (resume) out.overrides.push_back("checkpoint.resume=\"" + *resume + "\"");
  return out;
}

int run_mpi_command(const Invocation& inv, const ConfigArgs& config_args,
                    const std::function<int(const MpiJob&)>& body) {
  end_with_launcher();
  int argc = inv.argc;  // MPI_Init may take its own arguments out
  char** argv = inv.argv;
  comm::MpiEnvironment env(argc, argv);
  const Logger log(env.world_rank());
  try {
    const auto world = comm::Communicator::world();
    if (world.rank() == 0) log_blas_pin(log);
    const std::string stamp =
        world.broadcast(world.rank() == 0 ? local_time("%Y%m%d-%H%M%S") : "", 0);
    std::optional<Config> config;
    comm::run_agreed(world, "loading the config", [&] {
      config.emplace(
          load_config_file(config_args.path, environment_sources(config_args.overrides, stamp)));
    });
    comm::agree_with_root(world, "config", rank_invariant_values(*config),
                          "every rank must run the same config file and --set options");
    return body(MpiJob{*config, world, log, env});
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

}  // namespace conflux::cli
