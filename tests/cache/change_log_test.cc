// ChangeLog (cache/cache_state.h): the order in which a kind of slot last changed, which
// incremental snapshots read from its tail. Each slot has one live entry, of its latest
// generation; the log stays within twice its live entries plus a fixed slack.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
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

}  // namespace
}  // namespace volcache
