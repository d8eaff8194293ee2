#pragma once
/// @file roles.hpp
/// The split of MPI_COMM_WORLD into trainer ranks and preprocessing-worker ranks.

#include <string>

#include "conflux/comm/communicator.hpp"

namespace conflux::comm {

/// What a rank does.
enum class Role { kTrainer, kWorker };

/// "trainer" or "worker".
std::string_view role_name(Role role);

/// Where this rank sits in the job. World ranks [0, trainers) train; the rest are workers.
struct RoleLayout {
  Role role = Role::kTrainer;
  int world_rank = 0;
  int world_size = 1;
  int trainers = 1;
  int workers = 0;
  int role_rank = 0;        ///< rank among the ranks of the same role
  int node_local_rank = 0;  ///< rank among the ranks of this node (for GPU binding)
  int node_local_size = 1;

  /// World rank of trainer t.
  int trainer_world_rank(int t) const noexcept { return t; }
  /// World rank of worker w.
  int worker_world_rank(int w) const noexcept { return trainers + w; }
};

/// The role split with its communicators (all collective to create).
struct RoleSplit {
  RoleLayout layout;
  Communicator role_comm;  ///< trainers among themselves, or workers among themselves
  Communicator node_comm;  ///< ranks on this node
};

/// Splits `world` into `trainers` trainer ranks followed by `workers` worker ranks.
/// trainers + workers must equal world.size() (validated by Config::workers_for beforehand).
RoleSplit split_roles(const Communicator& world, int trainers, int workers);

}  // namespace conflux::comm
