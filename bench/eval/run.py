#!/usr/bin/env python3
"""make bench, moat eval: one generated batch (gen.py: 164 problems, a correct
and a wrong sample each) run by three executors, interleaved round by round
on the same machine with the same number of workers:

  human-eval-style  baseline.py: a multiprocessing Process (and Manager) per
                    sample, no isolation
  bare python3      bare.py: one `python3` process per sample, no sandbox
  moat eval         Python samples forked from a warm interpreter, each into
                    a cgroup and a confinement of its own (docs/eval.md)
  moat eval (cold)  MOAT_EVAL_WARM=0: every sample in a sandbox of its own,
                    for reference

Reports the median wall time of each, moat's ratio to the other two (the
targets: <= 0.2x human-eval-style, <= 1.0x bare python3), and the CPU per
sample (user + system of every process the executor waited for), and the
load average before and after.

usage: run.py --moat PATH [--rounds N] [--workers N] [--problems N]"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(argv, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run(argv, stdout=subprocess.PIPE, check=True, env=env).stdout.decode()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moat", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--problems", type=int, default=164)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="moat-eval-bench-")
    subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), d, "--problems", str(a.problems)], check=True)
    P, S = os.path.join(d, "problems.jsonl"), os.path.join(d, "samples.jsonl")
    n = sum(1 for _ in open(S))
    w = str(a.workers)
    runners = {
        "human-eval-style": [sys.executable, os.path.join(HERE, "baseline.py"), P, S, "--workers", w],
        "bare python3": [sys.executable, os.path.join(HERE, "bare.py"), P, S, "--workers", w],
        "moat eval": [a.moat, "eval", "--problems", P, "--samples", S, "--parallel", w, "--time", "10s",
                      "--out", os.devnull],
    }
    runners["moat eval (cold)"] = runners["moat eval"]
    envs = {"moat eval (cold)": dict(os.environ, MOAT_EVAL_WARM="0")}
    load0 = os.getloadavg()
    warm = []
    walls = {k: [] for k in runners}
    cpus = {k: [] for k in runners}
    for r in range(a.rounds):
        for name, argv in runners.items():
            wall, cpu, out = timed(argv, envs.get(name))
            res = json.loads(out.strip().splitlines()[-1])
            if name == "moat eval":
                warm.append(res.get("warm_samples", 0))
            if res.get("passed") != a.problems:
                sys.exit("eval bench: %s passed %s of %d correct samples" % (name, res.get("passed"), a.problems))
            walls[name].append(wall)
            cpus[name].append(cpu)
    load1 = os.getloadavg()
    print("eval: %d problems, %d samples (half correct), %d workers, median of %d interleaved rounds" % (
        a.problems, n, a.workers, a.rounds))
    print("  load average (1 min) %.1f before, %.1f after; moat eval ran %d of %d samples warm" % (
        load0[0], load1[0], min(warm), n))
    print("  %-18s %10s %16s" % ("executor", "wall (s)", "CPU/sample (ms)"))
    med = {k: statistics.median(v) for k, v in walls.items()}
    for k in runners:
        print("  %-18s %10.2f %16.1f" % (k, med[k], statistics.median(cpus[k]) * 1000 / n))
    rounds = [walls["moat eval"][i] / walls["human-eval-style"][i] for i in range(a.rounds)]
    print("  moat eval / human-eval-style by round: %s" % " ".join("%.2fx" % x for x in rounds))
    r1 = med["moat eval"] / med["human-eval-style"]
    r2 = med["moat eval"] / med["bare python3"]
    print("  moat eval / human-eval-style: %.2fx (target <= 0.2x: %s)" % (r1, "met" if r1 <= 0.2 else "NOT met"))
    print("  moat eval / bare python3:     %.2fx (target <= 1.0x: %s)" % (r2, "met" if r2 <= 1.0 else "NOT met"))
    for f in (P, S):
        os.unlink(f)
    os.rmdir(d)


main()
