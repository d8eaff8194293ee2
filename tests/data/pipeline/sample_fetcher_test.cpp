#include "conflux/data/pipeline/sample_fetcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

// A streamed source of `n` samples of `bytes` bytes each (sample i is filled with i % 251) that
// counts every read, can be slowed down, and fails on one chosen sample.
class CountingSource final : public SampleSource {
 public:
  CountingSource(std::size_t n, std::size_t bytes) : reads_(n), bytes_(bytes) {
    info_.name = "counting";
    info_.format = SampleFormat::kEncoded;
    info_.num_classes = 1;
  }
  const SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return reads_.size(); }
  model::Label label(std::size_t) const override { return 0; }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    ++reads_[i];
    if (i == failing_) CONFLUX_INPUT_ERROR("sample {}: unreadable", i);
    out.assign(bytes_, static_cast<std::uint8_t>(i % 251));
  }
  std::string where(std::size_t i) const override { return std::to_string(i); }
  std::size_t resident_bytes() const noexcept override { return 0; }
  int reads(std::size_t i) const { return reads_[i].load(); }
  std::chrono::microseconds delay_{0};
  std::size_t failing_ = static_cast<std::size_t>(-1);

 private:
  SourceInfo info_;
  mutable std::vector<std::atomic<int>> reads_;
  std::size_t bytes_;
};

std::vector<std::uint32_t> range(std::uint32_t begin, std::uint32_t end) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

void expect_bytes_of(const SampleBytes& bytes, const std::vector<std::uint32_t>& samples,
                     std::size_t size) {
  ASSERT_EQ(bytes.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(bytes[i],
              std::vector<std::uint8_t>(size, static_cast<std::uint8_t>(samples[i] % 251)))
        << "sample " << samples[i];
  }
}

TEST(SampleFetcher, DeliversEachBatchsBytesInOrderReadingEverySampleOnce) {
  CountingSource source(64, 100);
  SampleFetcher fetcher(source, 1 << 20);
  std::vector<std::uint64_t> tickets;
  std::vector<std::vector<std::uint32_t>> batches;
  for (std::uint32_t b = 0; b < 8; ++b) {
    batches.push_back(range(b * 8, b * 8 + 8));
    tickets.push_back(fetcher.enqueue(batches.back()));
  }
  // Taken out of order (an urgent batch first): still each sample read exactly once.
  expect_bytes_of(fetcher.take(tickets[5]), batches[5], 100);
  for (std::size_t b = 0; b < 8; ++b) {
    if (b != 5) expect_bytes_of(fetcher.take(tickets[b]), batches[b], 100);
  }
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(source.reads(i), 1) << "sample " << i;
  const FetcherStats stats = fetcher.stats();
  EXPECT_EQ(stats.samples_read_ahead + stats.samples_read_late, 64u);
  EXPECT_EQ(stats.bytes_read, 6400u);
}

TEST(SampleFetcher, HoldsNoMoreThanItsBudgetPlusOneSample) {
  CountingSource source(200, 1000);
  SampleFetcher fetcher(source, 4500);  // four and a half samples
  std::vector<std::uint64_t> tickets;
  for (std::uint32_t b = 0; b < 20; ++b)
    tickets.push_back(fetcher.enqueue(range(b * 10, b * 10 + 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the I/O thread fill up
  EXPECT_LE(fetcher.stats().peak_bytes_held, 5000u);
  EXPECT_GE(fetcher.stats().samples_read_ahead, 5u) << "the I/O thread did not read ahead";
  for (std::uint32_t b = 0; b < 20; ++b) {
    expect_bytes_of(fetcher.take(tickets[b]), range(b * 10, b * 10 + 10), 1000);
  }
  EXPECT_LE(fetcher.stats().peak_bytes_held, 5000u);
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(source.reads(i), 1) << "sample " << i;
}

TEST(SampleFetcher, ReadsAheadWhileTheBuilderWorks) {
  CountingSource source(40, 10);
  SampleFetcher fetcher(source, 1 << 20);
  const auto first = fetcher.enqueue(range(0, 20));
  const auto second = fetcher.enqueue(range(20, 40));
  (void)fetcher.take(first);  // at once: the taker reads what was not read yet
  const std::uint64_t late_before = fetcher.stats().samples_read_late;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // "building" the first batch
  (void)fetcher.take(second);
  EXPECT_EQ(fetcher.stats().samples_read_late, late_before)
      << "the second batch was not read ahead";
}

TEST(SampleFetcher, ADroppedBatchIsNotReadFurther) {
  CountingSource source(1000, 10);
  source.delay_ = std::chrono::microseconds(2000);
  SampleFetcher fetcher(source, 1 << 20);
  const auto ticket = fetcher.enqueue(range(0, 1000));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  fetcher.drop(ticket);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int read = 0;
  for (std::size_t i = 0; i < 1000; ++i) read += source.reads(i);
  EXPECT_LT(read, 100) << "reads went on after the batch was dropped";
}

TEST(SampleFetcher, AReadErrorSurfacesWhereTheBatchIsTaken) {
  CountingSource source(20, 10);
  source.failing_ = 7;
  SampleFetcher fetcher(source, 1 << 20);
  const auto ticket = fetcher.enqueue(range(0, 20));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_THROW((void)fetcher.take(ticket), InputError);
}

}  // namespace
}  // namespace conflux::data
