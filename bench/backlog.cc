#include "bench/backlog.h"

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "app/run_driver.h"

namespace volcache::bench {

int Backlog(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.mode.empty() && o.mode != "allocate" && o.mode != "enqueue") {
    err << "bench backlog: --mode must be allocate or enqueue, not " << o.mode << "\n";
    return 2;
  }
  for (const char* mode : {"allocate", "enqueue"}) {
    if (!o.mode.empty() && o.mode != mode) continue;
    // What `volcache run --jobs 20000 --skip 0 --arrival-scale 100000 --cluster-scale 1
    // --duration 2m [--actions enqueue,allocate]` runs.
    app::RunOptions r;
    r.trace.max_jobs = 20000;
    r.trace.skip = 0;
    r.trace.time_scale = 60;
    r.trace.arrival_scale = 100000;
    r.trace.cluster_scale = 1;
    r.duration = std::chrono::minutes(2);
    r.runtime.cache.scheduler_name = r.trace.scheduler_name;
    r.scheduler.enqueue = std::string(mode) == "enqueue";
    app::SimRun run(r);
    if (Status s = run.Load(); !s.ok()) {
      err << "bench backlog: " << s.message() << "\n";
      return 2;
    }
    const app::RunReport report = run.Run();
    if (!report.errors.empty()) {
      err << "bench backlog: the run reported errors: " << report.errors.front() << "\n";
      return 1;
    }
    // The run report's own figures, as `volcache run --report json` prints them.
    const auto full = nlohmann::ordered_json::parse(report.ToJson());
    nlohmann::ordered_json j;
    j["bench"] = "backlog";
    j["mode"] = mode;
    j["actions"] = ActionsName(r.scheduler);
    j["sessions"] = report.sessions;
    j["jobs_pending_at_end"] = report.jobs_pending;
    for (const char* key : {"snapshot_ms", "session_ms", "session_phase_ms_mean", "wall_seconds"})
      j[key] = full[key];
    out << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace volcache::bench
