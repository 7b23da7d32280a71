#!/usr/bin/env python3
"""Runs each sample as a bare `python3` process, no sandbox and no harness:
prompt + completion + test + check(entry_point) on stdin, pass when it
exits 0. N at once. The floor moat eval is measured against.

usage: bare.py PROBLEMS SAMPLES [--workers N] [--timeout S]
prints one JSON line: samples, passed, wall_ms"""
import argparse
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor


def run(problem, completion, timeout):
    program = problem["prompt"] + completion + "\n" + problem["test"] + "\n" + "check(%s)\n" % problem["entry_point"]
    try:
        p = subprocess.run(["/usr/bin/python3", "-I", "-"], input=program.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout)
        return p.returncode == 0
    except subprocess.TimeoutExpired:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problems")
    ap.add_argument("samples")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    a = ap.parse_args()
    problems = {p["task_id"]: p for p in map(json.loads, open(a.problems))}
    samples = [json.loads(l) for l in open(a.samples)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.workers) as ex:
        passed = list(ex.map(lambda s: run(problems[s["task_id"]], s["completion"], a.timeout), samples))
    print(json.dumps({"samples": len(samples), "passed": sum(passed), "wall_ms": int((time.monotonic() - t0) * 1000)}))


if __name__ == "__main__":
    main()
