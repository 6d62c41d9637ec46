#include "kube/leader_election.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "kube/rest_writers.h"

namespace volcache::kube {

namespace {

using json = nlohmann::json;
constexpr char kGroup[] = "coordination.k8s.io";

int64_t WallNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t WholeSeconds(Duration d) {
  return static_cast<int64_t>(std::ceil(std::chrono::duration<double>(d).count()));
}

}  // namespace

// The timer callbacks hold this, not the elector: a timer that fires during or after Stop()
// finds `self` cleared. `mu` is held for the whole attempt, so Stop() (which clears `self`
// under it) returns only once no attempt runs.
struct LeaderElector::Anchor {
  Mutex mu;
  LeaderElector* self GUARDED_BY(mu) = nullptr;
};

const char* ToString(LeaderState s) {
  switch (s) {
    case LeaderState::kStandby:
      return "standby";
    case LeaderState::kLeading:
      return "leading";
    case LeaderState::kLost:
      return "lost";
    case LeaderState::kStopped:
      return "stopped";
  }
  return "?";
}

Status ValidateLeaderElection(const LeaderElectionOptions& o) {
  using std::chrono::duration;
  if (o.retry_period <= Duration::zero())
    return Status::InvalidArgument("--leader-elect-retry-period must be positive");
  if (o.renew_deadline <= Duration::zero())
    return Status::InvalidArgument("--leader-elect-renew-deadline must be positive");
  if (o.lease_duration < std::chrono::seconds(1) ||
      o.lease_duration % std::chrono::seconds(1) != Duration::zero())
    return Status::InvalidArgument("--leader-elect-lease-duration must be a whole number of seconds >= 1s");
  if (o.lease_duration <= o.renew_deadline)
    return Status::InvalidArgument(
        "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline");
  if (duration<double>(o.renew_deadline).count() <= 1.2 * duration<double>(o.retry_period).count())
    return Status::InvalidArgument(
        "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period");
  if (o.lease_namespace.empty() || o.lease_name.empty())
    return Status::InvalidArgument(
        "--leader-elect-resource-namespace and --leader-elect-resource-name must be set");
  return Status::Ok();
}

std::string DefaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof(host), "volcache");
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return fmt::format("{}_{:016x}", host, r);
}

std::string FormatMicroTime(int64_t micros) {
  const std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", buf, micros % 1000000);
}

std::string LeaseBody(const std::string& ns, const std::string& name, const LeaseRecord& r,
                      const std::string& resource_version) {
  json meta = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  json spec = {{"leaseDurationSeconds", r.lease_duration_seconds}, {"leaseTransitions", r.transitions}};
  // An empty holder is written as "" (released), as client-go does.
  spec["holderIdentity"] = r.holder;
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return json{{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", meta}, {"spec", spec}}
      .dump();
}

Status ParseLease(std::string_view body, LeaseRecord* record, std::string* resource_version) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("Lease: the answer is not JSON");
  try {
    *resource_version = j.at("metadata").value("resourceVersion", "");
    LeaseRecord r;
    if (j.contains("spec") && j["spec"].is_object()) {
      const json& s = j["spec"];
      auto str = [&](const char* f) {
        auto it = s.find(f);
        return it != s.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      auto num = [&](const char* f) {
        auto it = s.find(f);
        return it != s.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
      };
      r.holder = str("holderIdentity");
      r.lease_duration_seconds = num("leaseDurationSeconds");
      r.acquire_time = str("acquireTime");
      r.renew_time = str("renewTime");
      r.transitions = num("leaseTransitions");
    }
    *record = std::move(r);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(fmt::format("Lease: {}", e.what()));
  }
  return Status::Ok();
}

LeaderElector::LeaderElector(RestClient* client, std::shared_ptr<Clock> clock, LeaderElectionOptions options)
    : client_(client),
      clock_(std::move(clock)),
      options_([&] {
        if (options.identity.empty()) options.identity = DefaultIdentity();
        return std::move(options);
      }()),
      path_(fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}", options_.lease_namespace,
                        options_.lease_name)),
      collection_path_(
          fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases", options_.lease_namespace)),
      log_(clock_, std::chrono::seconds(60)),
      anchor_(std::make_shared<Anchor>()) {
  anchor_->self = this;
  MutexLock lock(&mu_);
  rng_.seed(options_.seed ? options_.seed : std::random_device{}());
}

LeaderElector::~LeaderElector() { Stop(false); }

void LeaderElector::Start() {
  MutexLock lock(&mu_);
  if (started_ || state_ == LeaderState::kStopped) return;
  started_ = true;
  spdlog::info(
      "leader election: {} is a candidate for lease {}/{} (duration {} s, renew deadline {} ms, retry {} ms)",
      options_.identity, options_.lease_namespace, options_.lease_name, WholeSeconds(options_.lease_duration),
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.renew_deadline).count(),
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.retry_period).count());
  std::weak_ptr<Anchor> weak = anchor_;
  timer_ = clock_->AfterFunc(Duration::zero(), [weak] {
    if (auto a = weak.lock()) {
      MutexLock l(&a->mu);
      if (a->self) a->self->Step();
    }
  });
}

void LeaderElector::Stop(bool release) {
  {
    MutexLock l(&anchor_->mu);  // waits for an attempt in progress
    if (!anchor_->self) return;
    anchor_->self = nullptr;
  }
  uint64_t timer = 0;
  {
    MutexLock lock(&mu_);
    timer = timer_;
    timer_ = 0;
  }
  if (timer) clock_->Cancel(timer);
  if (release) Release();
  MutexLock lock(&mu_);
  if (state_ != LeaderState::kLost) state_ = LeaderState::kStopped;
}

void LeaderElector::CheckDeadlineLocked(TimePoint now) {
  if (state_ == LeaderState::kLeading && now >= SaturatingAdd(renewed_at_, options_.renew_deadline)) {
    state_ = LeaderState::kLost;
    ++transitions_;
    spdlog::error(
        "leader election: {} failed to renew lease {}/{} within the renew deadline ({} ms): "
        "leaderelection lost",
        options_.identity, options_.lease_namespace, options_.lease_name,
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.renew_deadline).count());
  }
}

bool LeaderElector::IsLeader() {
  MutexLock lock(&mu_);
  CheckDeadlineLocked(clock_->Now());
  return state_ == LeaderState::kLeading;
}

Status LeaderElector::WriteGate() {
  if (IsLeader()) return Status::Ok();
  return Status::FailedPrecondition("not the leader (leader election): write not sent");
}

LeaderState LeaderElector::state() {
  MutexLock lock(&mu_);
  CheckDeadlineLocked(clock_->Now());
  return state_;
}

bool LeaderElector::Healthy() { return state() != LeaderState::kLost; }

uint64_t LeaderElector::transitions() const {
  MutexLock lock(&mu_);
  return transitions_;
}

LeaseRecord LeaderElector::observed() const {
  MutexLock lock(&mu_);
  return observed_;
}

void LeaderElector::Warn(const std::string& key, const std::string& message) {
  uint64_t suppressed = 0;
  if (log_.ShouldLog(key, message, &suppressed)) {
    spdlog::warn("leader election: {}", LogThrottle::WithRepeats(message, suppressed));
  }
}

void LeaderElector::Step() {
  const TimePoint started = clock_->Now();
  {
    MutexLock lock(&mu_);
    timer_ = 0;
    CheckDeadlineLocked(started);
    if (state_ == LeaderState::kLost || state_ == LeaderState::kStopped) return;
  }
  const bool ok = TryAcquireOrRenew(started);
  Duration wait = options_.retry_period;
  {
    MutexLock lock(&mu_);
    if (ok) {
      // A renewal that started before the deadline and succeeded after it does not revive
      // a lost leader (checked first): the gate never reopens.
      CheckDeadlineLocked(clock_->Now());
      if (state_ == LeaderState::kLost) return;
      renewed_at_ = started;
      if (state_ != LeaderState::kLeading) {
        state_ = LeaderState::kLeading;
        ++transitions_;
        spdlog::info("leader election: {} acquired lease {}/{}: leading", options_.identity,
                     options_.lease_namespace, options_.lease_name);
      }
    } else {
      CheckDeadlineLocked(clock_->Now());
      if (state_ == LeaderState::kLost) return;
    }
    if (state_ == LeaderState::kStandby && options_.jitter > 0) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
      wait += std::chrono::duration_cast<Duration>(options_.retry_period * (options_.jitter * u));
    }
    if (state_ == LeaderState::kStandby && observed_any_ && !observed_.holder.empty()) {
      // Do not sleep past the moment the observed record expires (in our view): the
      // takeover after a crash then takes lease duration + the observation lag, not that
      // plus up to another jittered retry period. Expiry is still only judged by the rule above.
      const TimePoint expiry =
          SaturatingAdd(observed_time_, std::chrono::seconds(observed_.lease_duration_seconds)) +
          std::chrono::milliseconds(10);
      const TimePoint now = clock_->Now();
      if (expiry > now && expiry - now < wait) wait = expiry - now;
    }
    std::weak_ptr<Anchor> weak = anchor_;
    timer_ = clock_->AfterFunc(wait, [weak] {
      if (auto a = weak.lock()) {
        MutexLock l(&a->mu);
        if (a->self) a->self->Step();
      }
    });
  }
}

bool LeaderElector::TryAcquireOrRenew(TimePoint now) {
  const std::string now_micro = FormatMicroTime(WallNowMicros());
  LeaseRecord mine{options_.identity, WholeSeconds(options_.lease_duration), now_micro, now_micro, 0};
  auto get = client_->Do("GET", path_);
  if (!get.ok()) {
    Warn("get", fmt::format("GET lease {}/{}: {}", options_.lease_namespace, options_.lease_name,
                            get.status().ToString()));
    return false;
  }
  if (get->status == 404) {
    auto created = client_->Do("POST", collection_path_,
                               LeaseBody(options_.lease_namespace, options_.lease_name, mine, ""));
    if (!created.ok()) {
      Warn("create", fmt::format("create lease {}/{}: {}", options_.lease_namespace, options_.lease_name,
                                 created.status().ToString()));
      return false;
    }
    if (created->status == 403) LogForbiddenOnce("create", "leases", kGroup);
    if (created->status == 409) return false;  // another candidate created it first
    if (created->status != 201 && created->status != 200) {
      Warn("create",
           ApiError(created->status, created->body,
                    fmt::format("create lease {}/{}", options_.lease_namespace, options_.lease_name))
               .ToString());
      return false;
    }
    LeaseRecord rec;
    std::string rv;
    if (!ParseLease(created->body, &rec, &rv).ok()) rec = mine;
    MutexLock lock(&mu_);
    observed_ = rec;
    observed_rv_ = rv;
    observed_time_ = now;
    observed_any_ = true;
    return true;
  }
  if (get->status != 200) {
    if (get->status == 403) {
      LogForbiddenOnce("get", "leases", kGroup);
    } else {
      Warn("get", ApiError(get->status, get->body,
                           fmt::format("GET lease {}/{}", options_.lease_namespace, options_.lease_name))
                      .ToString());
    }
    return false;
  }
  LeaseRecord old;
  std::string rv;
  if (Status s = ParseLease(get->body, &old, &rv); !s.ok()) {
    Warn("parse", s.ToString());
    return false;
  }
  {
    MutexLock lock(&mu_);
    if (!observed_any_ || !(old == observed_)) {
      observed_ = old;
      observed_time_ = now;
      observed_any_ = true;
    }
    observed_rv_ = rv;
    const bool held_by_me = old.holder == options_.identity;
    if (!old.holder.empty() && !held_by_me &&
        SaturatingAdd(observed_time_, std::chrono::seconds(old.lease_duration_seconds)) > now) {
      return false;  // held by another and not expired in our view
    }
    if (held_by_me) {
      mine.acquire_time = old.acquire_time;
      mine.transitions = old.transitions;
    } else {
      mine.transitions = old.transitions + 1;
    }
  }
  auto put = client_->Do("PUT", path_, LeaseBody(options_.lease_namespace, options_.lease_name, mine, rv));
  if (!put.ok()) {
    Warn("update", fmt::format("update lease {}/{}: {}", options_.lease_namespace, options_.lease_name,
                               put.status().ToString()));
    return false;
  }
  if (put->status == 409) {
    spdlog::info("leader election: lost the race for lease {}/{} (409 Conflict)", options_.lease_namespace,
                 options_.lease_name);
    return false;
  }
  if (put->status != 200) {
    if (put->status == 403) {
      LogForbiddenOnce("update", "leases", kGroup);
    } else {
      Warn("update",
           ApiError(put->status, put->body,
                    fmt::format("update lease {}/{}", options_.lease_namespace, options_.lease_name))
               .ToString());
    }
    return false;
  }
  LeaseRecord rec;
  std::string new_rv;
  if (!ParseLease(put->body, &rec, &new_rv).ok()) rec = mine;
  MutexLock lock(&mu_);
  observed_ = rec;
  observed_rv_ = new_rv;
  observed_time_ = now;
  return true;
}

void LeaderElector::Release() {
  LeaseRecord rec;
  std::string rv;
  {
    MutexLock lock(&mu_);
    CheckDeadlineLocked(clock_->Now());
    if (state_ != LeaderState::kLeading) return;
    state_ = LeaderState::kStopped;  // the gate closes before the lease is given up
    ++transitions_;
    rv = observed_rv_;
    rec.transitions = observed_.transitions;
  }
  const std::string now_micro = FormatMicroTime(WallNowMicros());
  rec.holder = "";
  rec.lease_duration_seconds = 1;
  rec.acquire_time = now_micro;
  rec.renew_time = now_micro;
  auto put = client_->Do("PUT", path_, LeaseBody(options_.lease_namespace, options_.lease_name, rec, rv));
  if (!put.ok() || put->status != 200) {
    spdlog::warn("leader election: releasing lease {}/{} failed ({}); it expires in {} s",
                 options_.lease_namespace, options_.lease_name,
                 put.ok() ? ApiError(put->status, put->body, "update").ToString() : put.status().ToString(),
                 WholeSeconds(options_.lease_duration));
    return;
  }
  spdlog::info("leader election: {} released lease {}/{}", options_.identity, options_.lease_namespace,
               options_.lease_name);
}

}  // namespace volcache::kube
