#include "conflux/data/service/service_protocol.hpp"

#include <gtest/gtest.h>

#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

TEST(ServiceProtocol, MetaRoundTripsHeaderIndicesAndLabels) {
  const ReplyHeader header{42, 7, 3, 1, 3, ReplyStatus::kBatch, 784};
  const std::uint32_t indices[] = {5, 99, 12};
  const model::Label labels[] = {1, 2, 9};
  std::vector<std::byte> bytes;
  encode_meta(header, indices, labels, bytes);
  ASSERT_EQ(bytes.size(), meta_bytes(3));
  const MetaView view = decode_meta(bytes, 4);
  EXPECT_EQ(view.header.sequence, 42u);
  EXPECT_EQ(view.header.step, 7u);
  EXPECT_EQ(view.header.epoch, 3u);
  EXPECT_EQ(view.header.trainer, 1);
  EXPECT_EQ(view.header.values_per_sample, 784u);
  EXPECT_EQ(std::vector<std::uint32_t>(view.indices.begin(), view.indices.end()),
            (std::vector<std::uint32_t>{5, 99, 12}));
  EXPECT_EQ(std::vector<model::Label>(view.labels.begin(), view.labels.end()),
            (std::vector<model::Label>{1, 2, 9}));
}

TEST(ServiceProtocol, EmptyBatchesAndCancellationsAreHeaderOnly) {
  std::vector<std::byte> bytes;
  encode_meta(ReplyHeader{1, 0, 0, 0, 0, ReplyStatus::kCancelled, 0}, {}, {}, bytes);
  EXPECT_EQ(bytes.size(), sizeof(ReplyHeader));
  EXPECT_EQ(decode_meta(bytes, 2).header.status, ReplyStatus::kCancelled);
}

TEST(ServiceProtocol, SizeNotMatchingTheHeaderIsAProtocolError) {
  std::vector<std::byte> bytes;
  const std::uint32_t indices[] = {1, 2};
  const model::Label labels[] = {0, 0};
  encode_meta(ReplyHeader{1, 0, 0, 0, 2, ReplyStatus::kBatch, 1}, indices, labels, bytes);
  bytes.pop_back();
  EXPECT_THROW(decode_meta(bytes, 3), RuntimeError);
  EXPECT_THROW(decode_meta(std::span(bytes).first(8), 3), RuntimeError);
}

TEST(ServiceProtocol, ReplyTagsStayWithinTheGuaranteedTagRange) {
  // MPI guarantees tags up to 32767; meta and image tags of one request differ.
  for (std::uint64_t s :
       std::initializer_list<std::uint64_t>{0, 1, kReplyTagSpan - 1, kReplyTagSpan, 123456789}) {
    EXPECT_LE(image_tag(s), 32767);
    EXPECT_GT(meta_tag(s), kRequestTag);
    EXPECT_EQ(image_tag(s), meta_tag(s) + 1);
  }
  EXPECT_EQ(meta_tag(0), meta_tag(kReplyTagSpan));
}

}  // namespace
}  // namespace conflux::data
