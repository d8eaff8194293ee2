#include "conflux/data/service/service_protocol.hpp"

#include <cstring>
#include <type_traits>

#include "conflux/core/error.hpp"

namespace conflux::data {

static_assert(std::is_trivially_copyable_v<Request> && sizeof(Request) == 40);
static_assert(std::is_trivially_copyable_v<ReplyHeader> && sizeof(ReplyHeader) == 56);

std::size_t meta_bytes(std::size_t samples) noexcept {
  return sizeof(ReplyHeader) + samples * (sizeof(std::uint32_t) + sizeof(model::Label));
}

void encode_meta(const ReplyHeader& header, std::span<const std::uint32_t> indices,
                 std::span<const model::Label> labels, std::vector<std::byte>& out) {
  out.resize(meta_bytes(indices.size()));
  std::byte* p = out.data();
  std::memcpy(p, &header, sizeof header);
  p += sizeof header;
  // An empty span may hold a null pointer, which memcpy must not be given even for 0 bytes.
  if (!indices.empty()) std::memcpy(p, indices.data(), indices.size_bytes());
  p += indices.size_bytes();
  if (!labels.empty()) std::memcpy(p, labels.data(), labels.size_bytes());
}

MetaView decode_meta(std::span<const std::byte> received, int peer) {
  MetaView view;
  CONFLUX_CHECK(received.size() >= sizeof(ReplyHeader),
                "data service: {}-byte answer from rank {} is shorter than its header",
                received.size(), peer);
  std::memcpy(&view.header, received.data(), sizeof view.header);
  const std::size_t n = view.header.samples;
  CONFLUX_CHECK(received.size() == meta_bytes(n),
                "data service: answer from rank {} has {} bytes but its header says {} samples "
                "({} bytes)",
                peer, received.size(), n, meta_bytes(n));
  // The indices follow a 56-byte header and the 4-byte labels follow the indices, so both are
  // 4-byte aligned in the receive buffer.
  const std::byte* p = received.data() + sizeof(ReplyHeader);
  view.indices = {reinterpret_cast<const std::uint32_t*>(p), n};
  view.labels = {reinterpret_cast<const model::Label*>(p + n * sizeof(std::uint32_t)), n};
  return view;
}

}  // namespace conflux::data
