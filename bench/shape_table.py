#!/usr/bin/env python3
"""The per-shape table of docs/BENCHMARKS.md from scripts/bench-all.sh's JSON lines.

Prints one Markdown row per measurement (full, deep and incremental snapshot, pod ingest in
process and from watch JSON, memory per task, resident set) with a column per shape, so that
the table is rebuilt from the raw lines instead of copied by hand.
    bench/shape_table.py FILE.jsonl
"""
import json
import sys

SHAPES = ["S", "M", "L", "XL", "XXL", "openb", "philly"]


def fmt_ms(v):
    if v < 0.01:
        return f"{v:.4f}"
    return f"{v:.3f}" if v < 0.1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def main(path):
    cells = {}  # (row, shape) -> text
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            shape, bench, mode = j.get("shape"), j.get("bench"), j.get("mode")
            if bench == "snapshot" and mode == "full":
                cells[("full snapshot, ms", shape)] = fmt_ms(j["ms"]["median"])
            elif bench == "snapshot" and mode == "deep":
                key = ("deep copy, 1 / 2 threads, ms", shape)
                one = fmt_ms(j["ms"]["median"])
                cells[key] = one if j["threads"] == 1 else f"{cells.get(key, '-')} / {one}"
            elif bench == "snapshot" and mode == "incremental":
                row = "incremental after 1 % churn, ms" if j["churn"] > 0 else "incremental after no change, ms"
                cells[(row, shape)] = fmt_ms(j["ms"]["median"])
                if "us_per_changed_object" in j:
                    cells[("incremental, µs per changed object (objects)", shape)] = (
                        f"{j['us_per_changed_object']:.2f} ({j['changed_objects']:,.0f})")
            elif bench == "ingest":
                row = "pod ingest in process, pods/s" if mode == "in_process" else "pod ingest from watch JSON, pods/s"
                cells[(row, shape)] = f"{j['per_s']['median']:,.0f}"
            elif bench == "memory":
                cells[("memory, bytes per task", shape)] = f"{j['bytes_per_task']:,.0f}"
                cells[("resident set after ingest, MiB", shape)] = f"{j['rss_bytes'] / 2**20:,.0f}"
    rows = []
    for key, _ in cells.items():
        if key[0] not in rows:
            rows.append(key[0])
    print("| measurement | " + " | ".join(SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for row in rows:
        print(f"| {row} | " + " | ".join(cells.get((row, s), "") for s in SHAPES) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
