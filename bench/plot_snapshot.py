#!/usr/bin/env python3
"""Plots snapshot time against cluster size (docs/snapshot.svg).

Runs `volcache bench snapshot` on the standard shapes (or reads its JSON lines from a file
given with --from), and draws full (copy-on-write), deep (materialized, 1 thread) and
incremental (1 % churn, no change) snapshot medians on log-log axes as a dependency-free SVG.

  bench/plot_snapshot.py --volcache build/cmd/volcache --shapes S,M,L,XL --out docs/snapshot.svg
"""
import argparse
import json
import math
import subprocess
import sys

TASKS = {"S": 500, "M": 10_000, "L": 100_000, "XL": 200_000, "XXL": 1_000_000}
SERIES = [
    ("full", None, "full (copy-on-write)", "#1f77b4"),
    ("deep", None, "deep copy (1 thread)", "#d62728"),
    ("incremental", 0.01, "incremental, 1 % churn", "#2ca02c"),
    ("incremental", 0.0, "incremental, no change", "#9467bd"),
]


def collect(args):
    lines = []
    if args.from_file:
        with open(args.from_file) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    else:
        for shape in args.shapes.split(","):
            out = subprocess.run([args.volcache, "bench", "snapshot", "--shape", shape, "--runs", str(args.runs)],
                                 check=True, capture_output=True, text=True).stdout
            lines += [json.loads(l) for l in out.splitlines() if l.strip()]
    points = {name: [] for _, _, name, _ in SERIES}
    for l in lines:
        for mode, churn, name, _ in SERIES:
            if l.get("mode") != mode or l["shape"] not in TASKS:
                continue
            if churn is not None and abs(l.get("churn", -1) - churn) > 1e-9:
                continue
            if mode == "deep" and l.get("threads") != 1:
                continue
            points[name].append((TASKS[l["shape"]], l["ms"]["median"]))
    return points


def svg(points, title):
    w, h, left, right, top, bottom = 720, 440, 80, 220, 40, 60
    xs = [x for p in points.values() for x, _ in p]
    ys = [y for p in points.values() for _, y in p if y > 0]
    if not xs or not ys:
        sys.exit("no data points")
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
    px = lambda x: left + (math.log10(x) - x0) / (x1 - x0) * (w - left - right)
    py = lambda y: h - bottom - (math.log10(y) - y0) / (y1 - y0) * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2 - 60}" y="22" font-size="15">{title}</text>']
    for e in range(x0, x1 + 1):
        x = px(10 ** e)
        out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{h - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x - 12}" y="{h - bottom + 18}">1e{e}</text>')
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{left}" y1="{y}" x2="{w - right}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 48}" y="{y + 4}">1e{e} ms</text>')
    out.append(f'<text x="{(w - right) / 2}" y="{h - 18}">tasks in the cluster</text>')
    for i, (_, _, name, color) in enumerate(SERIES):
        pts = sorted(points[name])
        if pts:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts if y > 0)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            for x, y in pts:
                if y > 0:
                    out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        ly = top + 20 + 20 * i
        out.append(f'<line x1="{w - right + 15}" y1="{ly}" x2="{w - right + 35}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{w - right + 40}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volcache", default="build/cmd/volcache")
    ap.add_argument("--shapes", default="S,M,L,XL")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--from", dest="from_file", help="JSON lines of `volcache bench snapshot` instead of running it")
    ap.add_argument("--out", default="docs/snapshot.svg")
    args = ap.parse_args()
    with open(args.out, "w") as f:
        f.write(svg(collect(args), "volcache snapshot time (median)"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
