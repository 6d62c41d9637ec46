#!/usr/bin/env python3
"""Side by side on a real kube-apiserver: `volcache serve` and Volcano's vc-scheduler v1.7.0
binding the same objects (../shared/tools: kube-apiserver, vc-scheduler), alternated.

Usage: scripts/serve-vs-volcano.py [--rounds N] [--nodes N] [--gangs N] [--gang-size N]
                                   [--kind anti-affinity|plain] [--volcache build/cmd/volcache]
                                   [--schedulers volcache,volcano]

Each round brings up a fresh API server, creates the nodes (Ready, hostname label), the default
Queue and the gangs (a PodGroup of minMember gang-size each; with --kind anti-affinity every
pod has required pod anti-affinity to its own gang per hostname), then starts one scheduler
and times, from its start, the moment every pod has a nodeName (as a pod watch opened before the
scheduler starts sees it). Prints one JSON line per run
and a summary line with the medians and their ratio. Python's standard library only.
"""
import argparse
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.environ.get("VOLCACHE_TOOLS_DIR", os.path.join(ROOT, "..", "shared", "tools"))
KAS = os.path.join(TOOLS, "kube-apiserver", "kube-apiserver.sh")
VCS = os.path.join(TOOLS, "vc-scheduler", "vc-scheduler.sh")


class Client:
    def __init__(self, env):
        self.base = env["SERVER"]
        self.token = env["TOKEN"]
        self.ctx = ssl.create_default_context(cafile=env["CA"])

    def do(self, method, path, body=None, content="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", content)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")


def parallel(n, fn, threads=16):
    errors = []
    lock = threading.Lock()
    idx = iter(range(n))

    def work():
        while True:
            with lock:
                i = next(idx, None)
            if i is None:
                return
            err = fn(i)
            if err:
                with lock:
                    errors.append(err)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError(errors[0])


def populate(c, a):
    def node(i):
        name = "n-%04d" % i
        s, b = c.do("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name}}})
        if s != 201:
            return "node %s: %s %s" % (name, s, b)
        status = {"status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                             "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]}}
        s, b = c.do("PATCH", "/api/v1/nodes/%s/status" % name, status, "application/merge-patch+json")
        return None if s == 200 else "node status %s: %s %s" % (name, s, b)

    parallel(a.nodes, node)
    s, b = c.do("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True}})
    if s not in (201, 409):
        raise RuntimeError("queue: %s %s" % (s, b))

    def gang(g):
        name = "g-%04d" % g
        s, b = c.do("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": a.gang_size, "queue": "default"}})
        if s != 201:
            return "podgroup %s: %s %s" % (name, s, b)
        for i in range(a.gang_size):
            spec = {"schedulerName": "volcano",
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.7",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
            if a.kind == "anti-affinity":
                spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"gang": name}}, "topologyKey": "kubernetes.io/hostname"}]}}
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "%s-%d" % (name, i), "namespace": "default", "labels": {"gang": name},
                                "annotations": {"scheduling.k8s.io/group-name": name}},
                   "spec": spec}
            s, b = c.do("POST", "/api/v1/namespaces/default/pods", pod)
            if s != 201:
                return "pod: %s %s" % (s, b)
        return None

    parallel(a.gangs, gang)


class BindWatch:
    """Watches the namespace's pods from `rv` and records, per pod, when it first carried a
    nodeName (time.monotonic()). A watch, not polling: it sees each bind when the API server
    publishes it and adds no LIST load to the server the schedulers are measured on."""

    def __init__(self, c, rv):
        self.c, self.rv = c, rv
        self.bound = {}
        self.cond = threading.Condition()
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            req = urllib.request.Request(self.c.base + "/api/v1/namespaces/default/pods?watch=1&resourceVersion=" +
                                         self.rv + "&allowWatchBookmarks=true&timeoutSeconds=600")
            req.add_header("Authorization", "Bearer " + self.c.token)
            try:
                with urllib.request.urlopen(req, context=self.c.ctx, timeout=600) as r:
                    for line in r:
                        ev = json.loads(line)
                        obj = ev.get("object", {})
                        rv = obj.get("metadata", {}).get("resourceVersion")
                        if rv:
                            self.rv = rv
                        if ev.get("type") in ("ADDED", "MODIFIED") and obj.get("spec", {}).get("nodeName"):
                            with self.cond:
                                self.bound.setdefault(obj["metadata"]["name"], time.monotonic())
                                self.cond.notify_all()
                        if self.stop:
                            return
            except Exception:
                time.sleep(0.1)

    def wait(self, total, deadline):
        with self.cond:
            while len(self.bound) < total and time.monotonic() < deadline:
                self.cond.wait(0.1)
            return dict(self.bound)


def placements(c):
    s, b = c.do("GET", "/api/v1/namespaces/default/pods")
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in b["items"]} if s == 200 else {}


def check_anti(nodes, a):
    """Every gang's pods on distinct nodes (the anti-affinity held)."""
    per = {}
    for name, node in nodes.items():
        g = name.rsplit("-", 1)[0]
        per.setdefault(g, []).append(node)
    return all(len(set(v)) == len(v) for v in per.values())


def run_one(scheduler, a, log_dir):
    d = tempfile.mkdtemp(prefix="svv.")
    subprocess.run([KAS, "up", d], check=True, stdout=subprocess.DEVNULL)
    proc = None
    try:
        if scheduler == "volcano":
            subprocess.run([VCS, "crds", d], check=True, stdout=subprocess.DEVNULL)
        env = {}
        for line in open(os.path.join(d, "env")):
            k, _, v = line.strip().partition("=")
            env[k] = v
        c = Client(env)
        populate(c, a)
        total = a.gangs * a.gang_size
        s, b = c.do("GET", "/api/v1/namespaces/default/pods?limit=1")
        watch = BindWatch(c, b["metadata"]["resourceVersion"])
        log = open(os.path.join(log_dir, "%s-%d.log" % (scheduler, int(time.time() * 1000))), "w")
        t0 = time.monotonic()
        if scheduler == "volcano":
            conf = os.path.join(TOOLS, "vc-scheduler", "volcano-scheduler.conf")
            proc = subprocess.Popen([VCS, "run", d, conf], stdout=log, stderr=subprocess.STDOUT)
        else:
            proc = subprocess.Popen([a.volcache, "serve", "--kubeconfig", os.path.join(d, "kubeconfig"),
                                     "--actions", "enqueue,allocate", "--no-admin"] + a.serve_args.split(),
                                    stdout=log, stderr=subprocess.STDOUT)
        bound = watch.wait(total, t0 + a.timeout)
        watch.stop = True
        n = len(bound)
        first = min(bound.values()) - t0 if bound else None
        took = max(bound.values()) - t0 if n == total else None
        nodes = placements(c)
        return {"scheduler": scheduler, "kind": a.kind, "nodes": a.nodes, "pods": total, "bound": n,
                "all_bound_s": round(took, 3) if took is not None else None,
                "first_bound_s": round(first, 3) if first is not None else None,
                "constraints_held": check_anti(nodes, a) if a.kind == "anti-affinity" else True}
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run([KAS, "down", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--gangs", type=int, default=200)
    p.add_argument("--gang-size", type=int, default=10)
    p.add_argument("--kind", choices=["anti-affinity", "plain"], default="anti-affinity")
    p.add_argument("--volcache", default=os.path.join(ROOT, "build", "cmd", "volcache"))
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--log-dir", default=None)
    p.add_argument("--serve-args", default="", help="more flags for volcache serve (space-separated)")
    p.add_argument("--schedulers", default="volcache,volcano", help="which to run, in turn (comma-separated)")
    a = p.parse_args()
    for tool in (KAS, VCS):
        if not os.path.exists(tool):
            print("SKIP: %s not found" % tool, file=sys.stderr)
            return 77
    log_dir = a.log_dir or tempfile.mkdtemp(prefix="svv-logs.")
    os.makedirs(log_dir, exist_ok=True)
    times = {"volcache": [], "volcano": []}
    for _ in range(a.rounds):
        for s in a.schedulers.split(","):
            r = run_one(s, a, log_dir)
            print(json.dumps(r), flush=True)
            if r["all_bound_s"] is not None:
                times[s].append(r["all_bound_s"])
    summary = {"summary": True, "kind": a.kind, "logs": log_dir}
    for s, v in times.items():
        summary[s + "_median_s"] = statistics.median(v) if v else None
    if times["volcache"] and times["volcano"]:
        summary["ratio"] = round(statistics.median(times["volcano"]) / statistics.median(times["volcache"]), 2)
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
