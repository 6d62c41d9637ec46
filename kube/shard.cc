#include "kube/shard.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

namespace volcache::kube {

namespace {

constexpr int kMaxMembers = 1024;

// The reflected IEEE polynomial's table, built at compile time.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

// A non-negative decimal integer, nothing else (no sign, no spaces).
std::optional<int> ParseIndex(std::string_view s) {
  int v = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

uint32_t Crc32Ieee(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

HashRing::HashRing(std::vector<std::string> members, int replicas) : members_(std::move(members)) {
  points_.reserve(members_.size() * static_cast<size_t>(std::max(replicas, 0)));
  for (uint32_t m = 0; m < members_.size(); ++m) {
    for (int i = 0; i < replicas; ++i) {
      points_.push_back({Crc32Ieee(std::to_string(i) + members_[m]), m});
    }
  }
  // Points are pushed in insertion order; a stable sort keeps that order among equal hashes,
  // and the last of each run is the one Go's map assignment would have kept.
  std::stable_sort(points_.begin(), points_.end(),
                   [](const Point& a, const Point& b) { return a.hash < b.hash; });
  std::vector<Point> unique;
  unique.reserve(points_.size());
  for (const Point& p : points_) {
    if (!unique.empty() && unique.back().hash == p.hash) {
      unique.back() = p;
    } else {
      unique.push_back(p);
    }
  }
  points_ = std::move(unique);
}

const std::string& HashRing::Owner(std::string_view key) const {
  static const std::string kNone;
  if (points_.empty()) return kNone;
  const uint32_t h = Crc32Ieee(key);
  auto it = std::upper_bound(points_.begin(), points_.end(), h,
                             [](uint32_t v, const Point& p) { return v < p.hash; });
  if (it == points_.end()) it = points_.begin();
  return members_[it->member];
}

std::string_view ShardKey(const k8s::ObjectMeta& meta) {
  return meta.owner_references.empty() ? meta.name.view()
                                       : std::string_view(meta.owner_references.front().name);
}

Result<std::optional<ShardConfig>> ResolveShard(const ShardSettings& s) {
  bool enabled = false;
  if (s.enable_flag) {
    enabled = *s.enable_flag;
  } else if (s.enable_env && !s.enable_env->empty()) {
    if (*s.enable_env == "true") {
      enabled = true;
    } else if (*s.enable_env != "false") {
      return Status::InvalidArgument(std::string(kMultiSchedulerEnableEnv) + "=\"" + *s.enable_env +
                                     "\": want true or false");
    }
  }
  if (!enabled) return std::optional<ShardConfig>();

  const bool num_from_flag = s.num_flag.has_value();
  const std::string num_name = num_from_flag ? "--scheduler-num" : kSchedulerNumEnv;
  const std::optional<std::string>& num_text = num_from_flag ? s.num_flag : s.num_env;
  if (!num_text || num_text->empty()) {
    return Status::InvalidArgument(
        std::string("multi-scheduler mode needs the member count: --scheduler-num or ") + kSchedulerNumEnv);
  }
  std::optional<int> num = ParseIndex(*num_text);
  if (!num || *num < 1 || *num > kMaxMembers) {
    return Status::InvalidArgument(num_name + "=\"" + *num_text + "\": want an integer from 1 to " +
                                   std::to_string(kMaxMembers));
  }

  const bool pod_from_flag = s.pod_name_flag.has_value();
  const std::string pod_name_name = pod_from_flag ? "--scheduler-pod-name" : kSchedulerPodNameEnv;
  const std::optional<std::string>& pod = pod_from_flag ? s.pod_name_flag : s.pod_name_env;
  if (!pod || pod->empty()) {
    return Status::InvalidArgument(
        std::string("multi-scheduler mode needs this instance's name: --scheduler-pod-name or ") +
        kSchedulerPodNameEnv);
  }
  const size_t dash = pod->rfind('-');
  std::optional<int> index = dash == std::string::npos ? std::nullopt : ParseIndex(pod->substr(dash + 1));
  if (dash == std::string::npos || dash == 0 || !index) {
    return Status::InvalidArgument(
        pod_name_name + "=\"" + *pod +
        "\": want <base>-<index>, e.g. volcano-scheduler-0 (a StatefulSet pod name)");
  }
  if (*index >= *num) {
    return Status::InvalidArgument(pod_name_name + "=\"" + *pod + "\": index " + std::to_string(*index) +
                                   " is not below the member count " + std::to_string(*num) + " (" +
                                   num_name + "): this instance would own nothing");
  }
  // Volcano names the members "<base>-<i>" with i printed in decimal: "sched-01" is not a member.
  if (pod->substr(dash + 1) != std::to_string(*index)) {
    return Status::InvalidArgument(pod_name_name + "=\"" + *pod + "\": the index must be written as " +
                                   std::to_string(*index) + " (members are <base>-0 .. <base>-" +
                                   std::to_string(*num - 1) + ")");
  }
  return std::optional<ShardConfig>(ShardConfig{*pod, pod->substr(0, dash), *num});
}

namespace {
std::vector<std::string> Members(const ShardConfig& c) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(c.num));
  for (int i = 0; i < c.num; ++i) out.push_back(c.base + "-" + std::to_string(i));
  return out;
}
}  // namespace

Shard::Shard(ShardConfig config) : config_(std::move(config)), ring_(Members(config_)) {}

}  // namespace volcache::kube
