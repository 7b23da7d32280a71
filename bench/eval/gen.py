#!/usr/bin/env python3
"""Generates a HumanEval-layout batch for the moat eval benchmark: N
problems (default 164, HumanEval's count) of a few kinds, each with a check
of several asserts, and two samples per problem: a correct one and a wrong
one (wrong in a way the asserts catch: off by one, a missing case, an
exception). Deterministic for a seed.

usage: gen.py OUTDIR [--problems N] [--seed S]   writes problems.jsonl, samples.jsonl"""
import argparse
import json
import os
import random

KINDS = []


def kind(fn):
    KINDS.append(fn)
    return fn


@kind
def poly(i, r):
    a, b, c = r.randint(1, 9), r.randint(-9, 9), r.randint(-50, 50)
    name = "poly_%d" % i
    prompt = 'def %s(x: int) -> int:\n    """Return %d*x*x + %d*x + %d."""\n' % (name, a, b, c)
    good = "    return %d * x * x + %d * x + %d\n" % (a, b, c)
    bad = "    return %d * x * x + %d * x + %d\n" % (a, b, c + 1)
    xs = [r.randint(-100, 100) for _ in range(6)]
    test = "\n\ndef check(candidate):\n" + "".join(
        "    assert candidate(%d) == %d\n" % (x, a * x * x + b * x + c) for x in xs)
    return name, prompt, good, bad, test


@kind
def count_vowels(i, r):
    name = "count_chars_%d" % i
    chars = "".join(sorted(r.sample("abcdefghijklmnopqrstuvwxyz", 4)))
    prompt = 'def %s(s: str) -> int:\n    """Count the characters of s that are in %r."""\n' % (name, chars)
    good = "    return sum(1 for ch in s if ch in %r)\n" % chars
    bad = "    return sum(1 for ch in s[1:] if ch in %r)\n" % chars
    words = ["".join(r.choice(chars + "xyz") for _ in range(r.randint(1, 15))) for _ in range(5)]
    words = [w if w[0] in chars else chars[0] + w for w in words]
    test = "\n\ndef check(candidate):\n" + "".join(
        "    assert candidate(%r) == %d\n" % (w, sum(1 for ch in w if ch in chars)) for w in words)
    return name, prompt, good, bad, test


@kind
def running_max(i, r):
    name = "running_max_%d" % i
    prompt = 'from typing import List\n\n\ndef %s(xs: List[int]) -> List[int]:\n    """The maximum of each prefix of xs."""\n' % name
    good = "    out, m = [], None\n    for x in xs:\n        m = x if m is None else max(m, x)\n        out.append(m)\n    return out\n"
    bad = "    return sorted(xs)\n"
    cases = []
    for _ in range(5):
        xs = [r.randint(-20, 20) for _ in range(r.randint(2, 10))]
        while sorted(xs) == [max(xs[:k + 1]) for k in range(len(xs))]:
            xs = [r.randint(-20, 20) for _ in range(r.randint(2, 10))]
        cases.append((xs, [max(xs[:k + 1]) for k in range(len(xs))]))
    test = "\n\nMETADATA = {}\n\n\ndef check(candidate):\n" + "".join(
        "    assert candidate(%r) == %r\n" % c for c in cases)
    return name, prompt, good, bad, test


@kind
def safe_div(i, r):
    name = "safe_div_%d" % i
    d = r.randint(2, 9)
    prompt = 'def %s(xs: list) -> list:\n    """Each element divided by %d, integer division; None for None."""\n' % (name, d)
    good = "    return [None if x is None else x // %d for x in xs]\n" % d
    bad = "    return [x // %d for x in xs]\n" % d  # TypeError on None
    xs = [r.randint(-100, 100) for _ in range(6)] + [None]
    test = "\n\ndef check(candidate):\n    assert candidate(%r) == %r\n    assert candidate([]) == []\n" % (
        xs, [None if x is None else x // d for x in xs])
    return name, prompt, good, bad, test


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--problems", type=int, default=164)
    ap.add_argument("--seed", type=int, default=20)
    a = ap.parse_args()
    r = random.Random(a.seed)
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "problems.jsonl"), "w") as pf, \
            open(os.path.join(a.outdir, "samples.jsonl"), "w") as sf:
        for i in range(a.problems):
            name, prompt, good, bad, test = KINDS[i % len(KINDS)](i, r)
            tid = "Bench/%d" % i
            pf.write(json.dumps({"task_id": tid, "prompt": prompt, "entry_point": name,
                                 "canonical_solution": good, "test": test}) + "\n")
            sf.write(json.dumps({"task_id": tid, "completion": good}) + "\n")
            sf.write(json.dumps({"task_id": tid, "completion": bad}) + "\n")


main()
