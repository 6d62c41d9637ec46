#!/usr/bin/python3
"""Parses a /metrics body with python3-prometheus-client's exposition-format parser.

Usage: parse_metrics.py FILE [FAMILY:TYPE ...]

Exits 1 (reason on stderr) when the parser refuses the text, when a sample belongs to no
declared family (the parser turns those into untyped singletons), when a family or a series
appears twice, when a histogram series lacks a +Inf bucket equal to its _count or a _sum or
its buckets are not cumulative, or when a FAMILY:TYPE given is missing or of another type.
Otherwise prints JSON on stdout: {family: {"type", "help", "samples": [[name, {labels}, value]]}}
with family names as exposed (counters keep their _total); non-finite values as strings.
"""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def fail(why):
    print("parse_metrics: " + why, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) < 2:
        fail("usage: parse_metrics.py FILE [FAMILY:TYPE ...]")
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends on malformed text
        fail("exposition parser: %s: %s" % (type(e).__name__, e))
    out = {}
    seen_series = set()
    for fam in families:
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        if fam.type not in ("counter", "gauge", "histogram"):
            fail("family %s has type %s (a sample outside its family, or no TYPE line)" % (name, fam.type))
        if name in out:
            fail("family %s appears twice" % name)
        if not fam.documentation:
            fail("family %s has no HELP" % name)
        if not fam.samples:
            fail("family %s has no samples" % name)
        hists = {}
        samples = []
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in seen_series:
                fail("series %s%s appears twice" % (s.name, dict(s.labels)))
            seen_series.add(key)
            value = s.value if math.isfinite(s.value) else str(s.value)
            samples.append([s.name, s.labels, value])
            if fam.type == "histogram":
                rest = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                h = hists.setdefault(rest, {"buckets": {}, "sum": None, "count": None})
                if s.name == fam.name + "_bucket":
                    h["buckets"][float(s.labels["le"])] = s.value
                elif s.name == fam.name + "_sum":
                    h["sum"] = s.value
                elif s.name == fam.name + "_count":
                    h["count"] = s.value
        for labels, h in hists.items():
            where = "%s%s" % (name, dict(labels))
            bounds = sorted(h["buckets"])
            if not bounds or bounds[-1] != math.inf:
                fail(where + ": no +Inf bucket")
            counts = [h["buckets"][b] for b in bounds]
            if counts != sorted(counts):
                fail(where + ": buckets not cumulative")
            if h["count"] != counts[-1]:
                fail(where + ": _count differs from the +Inf bucket")
            if h["sum"] is None:
                fail(where + ": no _sum")
        out[name] = {"type": fam.type, "help": fam.documentation, "samples": samples}
    for want in sys.argv[2:]:
        name, _, typ = want.partition(":")
        if name not in out:
            fail("family %s missing" % name)
        if out[name]["type"] != typ:
            fail("family %s is a %s, not a %s" % (name, out[name]["type"], typ))
    json.dump(out, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
