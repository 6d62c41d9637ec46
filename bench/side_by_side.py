#!/usr/bin/env python3
"""Ratios of volcache to Volcano per round, from scripts/bench-vs-volcano.sh's JSON lines.

Each round pairs Volcano's Snapshot() median (gc_forced) and AddPod rate with volcache's
full (copy-on-write) snapshot, deep copy (2 threads), incremental refresh after 1 % churn and
in-process ingest, measured back to back; issue 16's targets are read against these ratios.
    bench/side_by_side.py FILE.jsonl
"""
import collections
import json
import sys


def main(path):
    rounds = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            key = (j.get("shape"), j.get("round"))
            r = rounds[key]
            bench, mode = j.get("bench"), j.get("mode")
            if bench == "volcano_snapshot":
                r["volcano_ms"] = j["ms"]["median"]
            elif bench == "volcano_ingest":
                r["volcano_per_s"] = j["per_s"]["median"]
            elif bench == "snapshot" and mode == "full":
                r["full_ms"] = j["ms"]["median"]
            elif bench == "snapshot" and mode == "deep" and j.get("threads") == 2:
                r["deep2_ms"] = j["ms"]["median"]
            elif bench == "snapshot" and mode == "incremental" and j.get("churn", 0) > 0:
                r["incr_ms"] = j["ms"]["median"]
            elif bench == "ingest" and mode == "in_process":
                r["ingest_per_s"] = j["per_s"]["median"]
    print("| shape | round | Volcano Snapshot() ms | full ms (x) | deep 2 threads ms (x) "
          "| incremental 1 % ms (% of full) | ingest k pods/s (x Volcano) |")
    print("|---|---|---|---|---|---|---|")
    for (shape, rnd), r in sorted(rounds.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0)):
        v = r.get("volcano_ms")
        if v is None or "full_ms" not in r:
            continue
        full, deep, incr = r["full_ms"], r.get("deep2_ms"), r.get("incr_ms")
        ing, ving = r.get("ingest_per_s"), r.get("volcano_per_s")
        cells = [
            shape, str(rnd), f"{v:.1f}", f"{full:.2f} ({v / full:.0f}x)",
            f"{deep:.1f} ({v / deep:.1f}x)" if deep else "-",
            f"{incr:.2f} ({100 * incr / full:.0f} %)" if incr else "-",
            f"{ing / 1000:.0f} ({ing / ving:.2f}x)" if ing and ving else "-",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
