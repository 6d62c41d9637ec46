// The watch stream line splitter: chunks are not lines.
#include "kube/line_splitter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/k8s/decode.h"
#include "tests/kube/kube_test_util.h"
#include "tests/testdata.h"

namespace volcache::kube {
namespace {

std::vector<std::string> SplitInChunks(const std::string& stream, size_t chunk, Status* finish = nullptr) {
  LineSplitter s;
  std::vector<std::string> lines;
  for (size_t i = 0; i < stream.size(); i += chunk) {
    Status st = s.Feed(std::string_view(stream).substr(i, chunk), [&](std::string_view l) {
      lines.emplace_back(l);
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st;
  }
  Status f = s.Finish();
  if (finish) *finish = f;
  return lines;
}

TEST(LineSplitterTest, RealWatchStreamSplitAtEveryChunkSize) {
  const std::string stream =
      testing::ReadFileOrDie(testing::SharedDataDir() + "/k8s/watch/pod-watch-events-kind-2023.jsonl");
  std::vector<std::string> want;
  std::istringstream in(stream);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) want.push_back(line);
  }
  ASSERT_EQ(want.size(), 6u);
  for (size_t chunk : {1, 2, 3, 7, 64, 1000, 4096, 100000}) {
    Status finish;
    auto lines = SplitInChunks(stream, chunk, &finish);
    EXPECT_EQ(lines, want) << "chunk " << chunk;
    EXPECT_TRUE(finish.ok()) << finish;
  }
  // Every line decodes as the event the data README lists.
  const char* types[] = {"ADDED", "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"};
  for (size_t i = 0; i < want.size(); ++i) {
    auto ev = k8s::DecodeWatchEvent(want[i]);
    ASSERT_TRUE(ev.ok()) << ev.status();
    EXPECT_EQ(k8s::WatchEventTypeName(ev->type), types[i]);
  }
}

TEST(LineSplitterTest, CrLfAndEmptyLinesAndTruncation) {
  Status finish;
  EXPECT_EQ(SplitInChunks("a\r\n\n\r\nb\n", 2, &finish), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(finish.ok());
  EXPECT_EQ(SplitInChunks("a\nhalf a li", 3, &finish), (std::vector<std::string>{"a"}));
  EXPECT_EQ(finish.code(), StatusCode::kUnavailable);
  EXPECT_NE(finish.message().find("truncated"), std::string::npos) << finish;
}

TEST(LineSplitterTest, OversizedLineIsRefusedAndAnErrorStopsTheChunk) {
  LineSplitter s(8);
  auto keep = [](std::string_view) { return Status::Ok(); };
  EXPECT_TRUE(s.Feed("12345", keep).ok());
  EXPECT_EQ(s.Feed("6789", keep).code(), StatusCode::kResourceExhausted);
  s.Reset();
  std::vector<std::string> seen;
  Status st = s.Feed("ok\nbad\nlater\n", [&](std::string_view l) {
    seen.emplace_back(l);
    return l == "bad" ? Status::InvalidArgument("bad line") : Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seen, (std::vector<std::string>{"ok", "bad"}));
}

}  // namespace
}  // namespace volcache::kube
