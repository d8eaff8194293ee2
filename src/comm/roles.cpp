#include "conflux/comm/roles.hpp"

namespace conflux::comm {

std::string_view role_name(Role role) {
  return role == Role::kTrainer ? "trainer" : "worker";
}

RoleSplit split_roles(const Communicator& world, int trainers, int workers) {
  CONFLUX_CHECK(trainers >= 1 && workers >= 0 && trainers + workers == world.size(),
                "role split of {} trainers + {} workers does not fit {} ranks", trainers, workers,
                world.size());
  RoleLayout layout;
  layout.world_rank = world.rank();
  layout.world_size = world.size();
  layout.trainers = trainers;
  layout.workers = workers;
  layout.role = world.rank() < trainers ? Role::kTrainer : Role::kWorker;
  Communicator role_comm = world.split(layout.role == Role::kTrainer ? 0 : 1, world.rank());
  Communicator node_comm = world.split_node_local();
  layout.role_rank = role_comm.rank();
  layout.node_local_rank = node_comm.rank();
  layout.node_local_size = node_comm.size();
  return RoleSplit{layout, std::move(role_comm), std::move(node_comm)};
}

}  // namespace conflux::comm
