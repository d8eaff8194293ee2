// `conflux ckpt`: what a checkpoint holds (`inspect`) and whether checkpoints are intact
// (`verify`).

#include <fmt/format.h>

#include <iostream>

#include "command.hpp"
#include "conflux/ckpt/checkpoint_file.hpp"
#include "conflux/core/log.hpp"

namespace conflux::cli {
namespace {

int run_inspect(const Invocation& inv) {
  const auto file = operands(inv, 1, 1);
  if (!file) return 0;
  std::cout << ckpt::describe_checkpoint(file->front());
  return 0;
}

int run_verify(const Invocation& inv) {
  const auto files = operands(inv, 1, SIZE_MAX);
  if (!files) return 0;
  const Logger log;
  int code = 0;
  for (const std::string& file : *files) {
    try {
      const ckpt::TrainingState s = ckpt::read_checkpoint(file);
      fmt::print("ok {}: epoch {} step {}/{} (global step {}), {} parameters, checksum verified\n",
                 file, s.epoch, s.step, s.steps_per_epoch, s.global_step, s.params.size());
    } catch (const ckpt::CorruptCheckpoint& e) {
      log.error("{}", e.what());
      code = static_cast<int>(e.code());
    }
  }
  return code;
}

}  // namespace

const Command& ckpt_command() {
  static const Command inspect{
      .name = "inspect",
      .usage = "conflux ckpt inspect FILE.h5",
      .summary = "show what a checkpoint holds",
      .help =
          "Verifies the checksum, then prints the position (epoch, step), the model's tensors "
          "and trainers, and the run it belongs to. docs/checkpoints.md.",
      .run = run_inspect};
  static const Command verify{
      .name = "verify",
      .usage = "conflux ckpt verify FILE.h5...",
      .summary = "check checkpoints are intact",
      .help =
          "Reads every checkpoint whole and checks its checksum; prints one line per intact "
          "file and an error per damaged one (then exit 2, after checking the rest).",
      .run = run_verify};
  static const Command group{
      .name = "ckpt", .usage = "", .summary = "", .help = "", .actions = {&inspect, &verify}};
  return group;
}

}  // namespace conflux::cli
