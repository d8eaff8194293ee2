#include "conflux/comm/communicator.hpp"

#include <limits>
#include <utility>
#include <vector>

namespace conflux::comm {

Communicator::Communicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  if (comm_ == MPI_COMM_NULL) return;
  CONFLUX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  CONFLUX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  CONFLUX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

Communicator Communicator::world() {
  return Communicator(MPI_COMM_WORLD, false);
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      owned_(std::exchange(other.owned_, false)),
      rank_(other.rank_),
      size_(other.size_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
    rank_ = other.rank_;
    size_ = other.size_;
  }
  return *this;
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

Communicator Communicator::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  CONFLUX_MPI_CHECK(MPI_Comm_split(comm_, color, key, &out));
  return Communicator(out, true);
}

Communicator Communicator::split_node_local() const {
  MPI_Comm out = MPI_COMM_NULL;
  CONFLUX_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &out));
  return Communicator(out, true);
}

namespace {
template <typename T>
void allreduce_sum_impl(MPI_Comm comm, std::span<T> values, MPI_Datatype type,
                        std::chrono::duration<double> timeout) {
  // Non-blocking + polled wait: a dead or stuck peer becomes an error, not a hang.
  MPI_Request request = MPI_REQUEST_NULL;
  CONFLUX_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                                   type, MPI_SUM, comm, &request));
  wait_for(request, timeout, fmt::format("allreduce of {} values", values.size()));
}
}  // namespace

void Communicator::allreduce_sum(std::span<float> values,
                                 std::chrono::duration<double> timeout) const {
  allreduce_sum_impl(comm_, values, MPI_FLOAT, timeout);
}

void Communicator::allreduce_sum(std::span<double> values,
                                 std::chrono::duration<double> timeout) const {
  allreduce_sum_impl(comm_, values, MPI_DOUBLE, timeout);
}

PendingReduction& PendingReduction::operator=(PendingReduction&& other) noexcept {
  if (this != &other) {
    if (active()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
    request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
  }
  return *this;
}

PendingReduction::~PendingReduction() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (active() && !finalized) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void PendingReduction::wait(std::chrono::duration<double> timeout, const std::string& what) {
  if (active()) wait_for(request_, timeout, what);
}

PendingReduction Communicator::start_allreduce_sum(std::span<double> values) const {
  MPI_Request request = MPI_REQUEST_NULL;
  CONFLUX_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                                   MPI_DOUBLE, MPI_SUM, comm_, &request));
  return PendingReduction(request);
}

std::int64_t Communicator::allreduce_max(std::int64_t value) const {
  CONFLUX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, comm_));
  return value;
}

std::int64_t Communicator::allreduce_min(std::int64_t value) const {
  CONFLUX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MIN, comm_));
  return value;
}

std::string Communicator::broadcast(const std::string& value, int root) const {
  std::int64_t length = static_cast<std::int64_t>(value.size());
  CONFLUX_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm_));
  std::string out = rank_ == root ? value : std::string(static_cast<std::size_t>(length), '\0');
  CONFLUX_MPI_CHECK(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, root, comm_));
  return out;
}

std::vector<std::string> Communicator::gather(const std::string& value, int root) const {
  // Every rank learns every length (not only root) so that all of them reject an oversized total
  // alike, instead of root throwing while the others block in MPI_Gatherv.
  const auto length = static_cast<std::int64_t>(value.size());
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(size_));
  CONFLUX_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT64_T, lengths.data(), 1, MPI_INT64_T, comm_));
  std::int64_t total = 0;
  for (const std::int64_t l : lengths) total += l;
  CONFLUX_CHECK(total <= std::numeric_limits<int>::max(),
                "cannot gather {} bytes of strings: MPI counts are limited to 2 GiB", total);
  std::vector<int> counts(lengths.size());
  std::vector<int> displacements(lengths.size());
  for (std::size_t i = 0, offset = 0; i < lengths.size(); ++i) {
    counts[i] = static_cast<int>(lengths[i]);
    displacements[i] = static_cast<int>(offset);
    offset += static_cast<std::size_t>(lengths[i]);
  }
  std::string all(rank_ == root ? static_cast<std::size_t>(total) : 0, '\0');
  CONFLUX_MPI_CHECK(MPI_Gatherv(value.data(), static_cast<int>(length), MPI_CHAR, all.data(),
                                counts.data(), displacements.data(), MPI_CHAR, root, comm_));
  std::vector<std::string> out;
  if (rank_ != root) return out;
  out.reserve(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(displacements[i]),
                             static_cast<std::size_t>(counts[i])));
  }
  return out;
}

void Communicator::barrier() const {
  CONFLUX_MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace conflux::comm
