#pragma once
// fmt formatters for the api/ types that appear in logs:
//   Status, Resource, TaskStatus, NodePhase/NodeState, QueueState, TaskInfo (key@node:status),
//   k8s::WatchEventType.
// Include this only from .cc files that log (it pulls in fmt/format.h).

#include <fmt/format.h>

#include "api/k8s/objects.h"
#include "api/node_info.h"
#include "api/queue_info.h"
#include "api/resource.h"
#include "api/status.h"
#include "api/task_info.h"
#include "api/task_status.h"

template <>
struct fmt::formatter<volcache::Status> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const volcache::Status& s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(s.ToString(), ctx);
  }
};

template <>
struct fmt::formatter<volcache::Resource> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const volcache::Resource& r, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(r.ToString(), ctx);
  }
};

template <>
struct fmt::formatter<volcache::TaskStatus> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(volcache::TaskStatus s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(volcache::TaskStatusName(s), ctx);
  }
};

template <>
struct fmt::formatter<volcache::QueueState> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(volcache::QueueState s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(volcache::QueueStateName(s), ctx);
  }
};

template <>
struct fmt::formatter<volcache::NodeState> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const volcache::NodeState& s, Ctx& ctx) const {
    std::string text = s.phase == volcache::NodePhase::kReady ? "Ready" : "NotReady";
    if (!s.reason.empty()) text += "(" + s.reason + ")";
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};

template <>
struct fmt::formatter<volcache::TaskInfo> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const volcache::TaskInfo& t, Ctx& ctx) const {
    std::string text = std::string(t.key()) + "@" +
                       (t.node_name.empty() ? std::string("-") : t.node_name.str()) + ":" +
                       std::string(volcache::TaskStatusName(t.status));
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};

template <>
struct fmt::formatter<volcache::k8s::WatchEventType> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(volcache::k8s::WatchEventType t, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(volcache::k8s::WatchEventTypeName(t), ctx);
  }
};
