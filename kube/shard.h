#pragma once
// Multi-scheduler sharding, compatible with Volcano's multi-scheduler mode: several active
// `serve` instances split one cluster, each scheduling only its own nodes and jobs, with no
// coordination but a shared, deterministic hash ring (docs/ADMIN.md, "Sharding").
//
// Volcano's rule (pkg/scheduler/cache/util.go) reproduced here:
//   - the members are `<base>-0 .. <base>-(N-1)`, where `<base>` is this instance's pod name
//     (SCHEDULER_POD_NAME) without its last `-<i>`, and N is SCHEDULER_NUM;
//   - the ring is stathat.com/c/consistent v1.0.0 (the version Volcano vendors): every member
//     puts 20 points on the ring at CRC-32 (IEEE) of the decimal replica index followed by the
//     member name ("0volcano-scheduler-0", ..., "19volcano-scheduler-0"); a key belongs to the
//     member of the first point strictly greater than CRC-32(key), wrapping to the first
//     point; when two points collide, the later member (higher index) keeps it;
//   - a pod or PodGroup is keyed by its first owner reference's name, else its own name (the
//     pods of a Volcano Job and its PodGroup share the Job as owner, so they land together);
//     a node by its name.
// Same members + same key => same owner, in volcache and in vc-scheduler alike, so a mixed
// fleet agrees on who owns what.
//
// Thread-safety: HashRing and Shard are immutable after construction; safe for concurrent use.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::kube {

// CRC-32 with the IEEE polynomial (zlib's crc32, Go's crc32.ChecksumIEEE).
uint32_t Crc32Ieee(std::string_view data);

class HashRing {
 public:
  static constexpr int kDefaultReplicas = 20;  // stathat/consistent's New()
  // Members in the order Volcano adds them (index 0 first: it matters only on collisions).
  explicit HashRing(std::vector<std::string> members, int replicas = kDefaultReplicas);

  // The member owning `key`; "" when the ring is empty.
  const std::string& Owner(std::string_view key) const;
  const std::vector<std::string>& members() const { return members_; }
  size_t points() const { return points_.size(); }

 private:
  struct Point {
    uint32_t hash;
    uint32_t member;  // index into members_
  };
  std::vector<std::string> members_;
  std::vector<Point> points_;  // sorted by hash, hashes unique
};

// The key an object is hashed by: its first owner reference's name, else its name.
std::string_view ShardKey(const k8s::ObjectMeta& meta);

// Raw settings as given: environment (Volcano's names) and `serve` flags; a flag, when
// given, wins over its variable.
struct ShardSettings {
  std::optional<std::string> enable_env = std::nullopt;     // MULTI_SCHEDULER_ENABLE
  std::optional<std::string> num_env = std::nullopt;        // SCHEDULER_NUM
  std::optional<std::string> pod_name_env = std::nullopt;   // SCHEDULER_POD_NAME
  std::optional<bool> enable_flag = std::nullopt;           // --multi-scheduler[=true|false]
  std::optional<std::string> num_flag = std::nullopt;       // --scheduler-num
  std::optional<std::string> pod_name_flag = std::nullopt;  // --scheduler-pod-name
};

inline constexpr char kMultiSchedulerEnableEnv[] = "MULTI_SCHEDULER_ENABLE";
inline constexpr char kSchedulerNumEnv[] = "SCHEDULER_NUM";
inline constexpr char kSchedulerPodNameEnv[] = "SCHEDULER_POD_NAME";

struct ShardConfig {
  std::string pod_name;  // this instance, e.g. volcano-scheduler-1
  std::string base;      // volcano-scheduler
  int num = 1;           // members base-0 .. base-(num-1)
};

// nullopt when sharding is off. InvalidArgument naming the flag or variable (and its value)
// when: MULTI_SCHEDULER_ENABLE is neither "true" nor "false"; the member count is not an
// integer in 1..1024; the pod name is missing or does not end in `-<i>` with 0 <= i < N (an
// instance outside the ring would own nothing). Volcano falls back to N=1 on a bad
// SCHEDULER_NUM and owns nothing with a bad pod name; we refuse to start instead.
Result<std::optional<ShardConfig>> ResolveShard(const ShardSettings& settings);

// One instance's view of the ring.
class Shard {
 public:
  explicit Shard(ShardConfig config);

  const ShardConfig& config() const { return config_; }
  const std::string& identity() const { return config_.pod_name; }
  const std::vector<std::string>& members() const { return ring_.members(); }
  const HashRing& ring() const { return ring_; }

  bool OwnsKey(std::string_view key) const { return ring_.Owner(key) == config_.pod_name; }
  bool OwnsNode(std::string_view node_name) const { return OwnsKey(node_name); }
  // Pods and PodGroups: by ShardKey.
  bool OwnsObject(const k8s::ObjectMeta& meta) const { return OwnsKey(ShardKey(meta)); }

 private:
  ShardConfig config_;
  HashRing ring_;
};

}  // namespace volcache::kube
