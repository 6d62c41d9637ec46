// ChangeLog (cache/cache_state.h): the order in which a kind of slot last changed, which
// incremental snapshots read from its tail. Each slot has one live entry, of its latest
// generation; the log stays within twice its live entries plus a fixed slack.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "cache/cache_state.h"

namespace volcache {
namespace {

using NodeSlot = Slot<NodeInfo>;

// The slots ForEachSince(since) visits, newest first.
std::vector<const NodeSlot*> Since(const ChangeLog<NodeInfo>& log, uint64_t since) {
  std::vector<const NodeSlot*> out;
  log.ForEachSince(since, [&out](const NodeSlot* s) { out.push_back(s); });
  return out;
}

TEST(ChangeLogTest, EachChangedSlotOnceNewestFirst) {
  std::deque<NodeSlot> slots(3);
  ChangeLog<NodeInfo> log;
  uint64_t gen = 0;
  for (NodeSlot& s : slots) log.Append(s, ++gen);
  log.Append(slots[0], ++gen);  // 4: slot 0 changes again
  EXPECT_EQ(slots[0].gen, 4u);
  EXPECT_EQ(Since(log, 0), (std::vector<const NodeSlot*>{&slots[0], &slots[2], &slots[1]}));
  EXPECT_EQ(Since(log, 2), (std::vector<const NodeSlot*>{&slots[0], &slots[2]}));
  EXPECT_EQ(Since(log, 4), std::vector<const NodeSlot*>{});
  log.Erase(slots[2]);
  EXPECT_EQ(Since(log, 0), (std::vector<const NodeSlot*>{&slots[0], &slots[1]}));
  EXPECT_EQ(log.live(), 2u);
}

// Random writes and erasures against a model (the generation each live slot last changed
// at): after every step, every window the log answers is the model's, and the log's size
// stays bounded while its cleared entries are dropped (thousands of writes, few slots).
TEST(ChangeLogTest, MatchesAModelAcrossCompactions) {
  std::mt19937_64 rng(42);
  std::deque<NodeSlot> slots(16);
  std::vector<bool> live(slots.size(), false);
  ChangeLog<NodeInfo> log;
  uint64_t gen = 0;
  size_t max_size = 0;
  for (int step = 0; step < 20000; ++step) {
    const size_t i = rng() % slots.size();
    if (live[i] && rng() % 8 == 0) {
      log.Erase(slots[i]);
      slots[i] = NodeSlot();
      live[i] = false;
    } else {
      log.Append(slots[i], ++gen);
      live[i] = true;
    }
    max_size = std::max(max_size, log.size());
    if (step % 97 != 0) continue;
    const uint64_t since = gen > 50 ? gen - rng() % 50 : 0;
    std::vector<const NodeSlot*> want;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (live[k] && slots[k].gen > since) want.push_back(&slots[k]);
    }
    std::sort(want.begin(), want.end(), [](const NodeSlot* a, const NodeSlot* b) { return a->gen > b->gen; });
    ASSERT_EQ(Since(log, since), want) << "step " << step << " since " << since;
    ASSERT_EQ(log.live(), static_cast<size_t>(std::count(live.begin(), live.end(), true)));
  }
  // 20,000 writes to at most 16 slots: without dropping cleared entries the log would hold
  // thousands; it holds at most 2 * 16 + kSlack + 1.
  EXPECT_LE(max_size, 2 * slots.size() + ChangeLog<NodeInfo>::kSlack + 1);
  EXPECT_EQ(Since(log, 0).size(), log.live());
}

// RetiredBatch (cache/cache_state.h): the refresh's versions to free, put in order after what
// the vector already held; the entries its bound reserved and nothing used are gone at the end.
TEST(RetiredBatchTest, KeepsWhatWasPutAfterTheEarlierEntriesAndTrimsTheRest) {
  RetiredVersions out;
  auto earlier = std::make_shared<const int>(1);
  out.push_back(earlier);
  auto a = std::make_shared<const int>(2);
  auto b = std::make_shared<const int>(3);
  {
    RetiredBatch batch(&out, 5);
    EXPECT_EQ(out.size(), 6u);
    batch.Put(std::shared_ptr<const int>(a));
    batch.Put(std::shared_ptr<const int>(b));
  }
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], earlier);
  EXPECT_EQ(out[1], a);
  EXPECT_EQ(out[2], b);
  EXPECT_EQ(a.use_count(), 2);  // held by the batch's vector: freed when it is
  out.clear();
  EXPECT_EQ(a.use_count(), 1);
}

TEST(RetiredBatchTest, GrowsWhenTheBoundFallsShort) {
  RetiredVersions out;
  std::vector<std::shared_ptr<const int>> put;
  {
    RetiredBatch batch(&out, 1);
    for (int i = 0; i < 40; ++i) {
      put.push_back(std::make_shared<const int>(i));
      batch.Put(std::shared_ptr<const int>(put.back()));
    }
  }
  ASSERT_EQ(out.size(), put.size());
  for (size_t i = 0; i < put.size(); ++i) EXPECT_EQ(out[i], put[i]) << i;
}

TEST(RetiredBatchTest, AnEmptyBatchLeavesTheVectorAsItWas) {
  RetiredVersions out(2);
  { RetiredBatch batch(&out, 100); }
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace volcache
