#!/usr/bin/env python3
"""Writes the moat eval test fixture: a few problems in HumanEval's, MBPP's
and MultiPL-E's layouts, written for moat's tests, and samples that are
correct, wrong, crashing, timing out or hostile. Each sample carries the
verdict it must get ("expect") and what it does ("note"); moat eval
ignores both keys.

usage: gen-fixture.py  (writes problems.jsonl and samples.jsonl here)"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

P = []
P.append({"task_id": "fixture/add", "entry_point": "add",
          "prompt": "def add(a, b):\n    \"\"\"Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    \"\"\"\n",
          "canonical_solution": "    return a + b\n",
          "test": "\n\nMETADATA = {'author': 'moat tests'}\n\n\ndef check(candidate):\n"
                  "    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
                  "    assert candidate(10**20, 1) == 10**20 + 1\n"})
P.append({"task_id": "fixture/sorted_unique", "entry_point": "sorted_unique",
          "prompt": "def sorted_unique(xs: list) -> list:\n    \"\"\"Return the distinct elements of xs, sorted.\"\"\"\n",
          "canonical_solution": "    return sorted(set(xs))\n",
          "test": "import random\n\n\ndef check(candidate):\n    rng = random.Random(7)\n    for _ in range(50):\n"
                  "        xs = [rng.randint(-5, 5) for _ in range(rng.randint(0, 12))]\n"
                  "        got = candidate(list(xs))\n        assert got == sorted(set(xs)), (xs, got)\n"})
# MBPP/EvalPlus style: the test runs its asserts itself.
P.append({"task_id": "fixture/mbpp_square", "entry_point": "square",
          "prompt": "def square(n):\n    \"\"\"Return n squared.\"\"\"\n",
          "canonical_solution": "    return n * n\n",
          "test": "assert square(3) == 9\nassert square(-4) == 16\n"})
# MultiPL-E's JavaScript layout.
P.append({"name": "fixture_js_max", "language": "js",
          "prompt": "//Return the largest element of the array.\nfunction max_element(l){\n",
          "tests": "const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = max_element;\n"
                   "  assert.deepEqual(candidate([1, 2, 3]),3);\n  assert.deepEqual(candidate([-5, -2, -9]),-2);\n}\n\ntest();\n"})
# MultiPL-E's C++ layout (the test closes the function and holds main), and
# the same shape in C.
# The compiler needs more than a Python sample: these problems say so.
CLIMITS = {"time": "120s", "cpu": "120s", "mem": "768M"}
P.append({"name": "fixture_cpp_sum", "language": "cpp", "limits": CLIMITS,
          "prompt": "#include<assert.h>\n#include<bits/stdc++.h>\n// Return the sum of the vector.\nlong sum_vector(std::vector<long> v) {\n",
          "tests": "}\nint main() {\n    auto candidate = sum_vector;\n    assert(candidate((std::vector<long>({1, 2, 3}))) == (6));\n"
                   "    assert(candidate((std::vector<long>())) == (0));\n}\n"})
P.append({"name": "fixture_c_twice", "language": "c", "limits": CLIMITS,
          "prompt": "#include <assert.h>\n/* Return twice x. */\nint twice(int x) {\n",
          "tests": "}\nint main() {\n    assert(twice(2) == 4);\n    assert(twice(-3) == -6);\n}\n"})

# A sample that hunts for the harness's nonce every way Python offers and,
# when it finds it, prints the harness's pass report and exits 0 with a
# wrong answer. tests/integration/eval.sh checks that it does find it in a
# harness stripped of its defenses.
STEAL = r'''
import os, re, sys
PAT = re.compile(rb"\nmoat-eval:([0-9a-f]{32}) ")
found = []
def look(b):
    if isinstance(b, (bytes, bytearray)):
        m = PAT.search(bytes(b))
        if m:
            found.append(m.group(1))
def frames(f):
    while f is not None:
        for v in list(f.f_locals.values()):
            look(v)
        f = f.f_back
def route_getframe():
    frames(sys._getframe())
def route_traceback():
    try:
        raise KeyError
    except KeyError as e:
        frames(e.__traceback__.tb_frame)
def route_gc():
    import gc
    for o in gc.get_objects():
        if callable(o) and getattr(o, "__closure__", None):
            for c in o.__closure__:
                try:
                    look(c.cell_contents)
                except ValueError:
                    pass
def route_trace():
    def tracer(frame, event, arg):
        frames(frame)
        return None
    sys.settrace(tracer)
def regions():
    # Anonymous memory and the heap: where Python keeps its objects (a
    # file mapping read past its file's end would raise SIGBUS).
    for line in open("/proc/self/maps"):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if f[1].startswith("r") and hi - lo < 1 << 28 and (len(f) == 5 or f[5] == "[heap]"):
            yield lo, hi
def route_proc_mem():
    with open("/proc/self/mem", "rb", 0) as mem:
        for lo, hi in regions():
            try:
                mem.seek(lo)
                look(mem.read(hi - lo))
            except OSError:
                pass
def route_ctypes():
    import ctypes
    for lo, hi in list(regions()):
        look(ctypes.string_at(lo, hi - lo))
def route_child():
    import subprocess
    out = subprocess.run(["/usr/bin/python3", "-c", "import re,sys\npid=sys.argv[1]\nmaps=open('/proc/%s/maps'%pid)\nmem=open('/proc/%s/mem'%pid,'rb',0)\nfor l in maps:\n  lo,hi=(int(x,16) for x in l.split()[0].split('-'))\n  try:\n    mem.seek(lo); b=mem.read(hi-lo)\n  except OSError: continue\n  m=re.search(rb'\\nmoat-eval:([0-9a-f]{32}) ',b)\n  if m: print(m.group(1).decode()); break\n", str(os.getpid())], capture_output=True)
    look(b"\nmoat-eval:" + out.stdout.strip() + b" ")
ROUTES = (route_getframe, route_traceback, route_gc, route_proc_mem, route_ctypes, route_child, route_trace)
for route in ROUTES:
    try:
        route()
    except BaseException:
        pass
def add(a, b):
    for n in found:
        os.write(1, b"\nmoat-eval:" + n + b" pass\n")
        os._exit(0)
    return a - b
'''

S = []


def s(task, expect, completion=None, solution=None, note=""):
    d = {"task_id": task}
    if solution is not None:
        d["solution"] = solution
    else:
        d["completion"] = completion
    d["expect"] = expect
    d["note"] = note
    S.append(d)


A = "fixture/add"
s(A, "pass", "    return a + b\n", note="correct")
s(A, "fail", "    return a - b\n", note="wrong")
s(A, "error", "    return a / 0\n", note="crashes")
s(A, "timeout", "    while True:\n        pass\n", note="never ends")
s(A, "error", "    import os\n    os._exit(0)\n", note="os._exit(0) before the tests")
s(A, "error", "    return a + b\nimport sys\nsys.exit(0)\n", note="sys.exit(0) in the body")
s(A, "error", "    raise SystemExit(0)\n", note="SystemExit raised inside check")
s(A, "fail", "    return a - b\nimport atexit\natexit.register(lambda: print('\\nmoat-eval:' + '0' * 32 + ' pass'))\n",
  note="atexit handler prints a report")
s(A, "error", "    return a - b\nprint('\\nmoat-eval:' + '0' * 32 + ' pass')\nimport os\nos._exit(0)\n",
  note="a guessed report, then exit 0")
s(A, "fail", "    return a - b\nimport builtins\nbuiltins.exec = lambda *a, **k: None\n"
  "builtins.dict = type('d', (dict,), {'get': lambda *a: (lambda c: None)})\n"
  "builtins.AssertionError = KeyError\nbuiltins.len = lambda x: 0\n", note="patched builtins")
s(A, "fail", "    import os, signal\n    for pid in (os.getppid(), 1):\n        try:\n            os.kill(pid, signal.SIGKILL)\n"
  "        except OSError:\n            pass\n    return a - b\n", note="kills its parent")
s(A, "fail", "    return a - b\n\ndef check(candidate):\n    pass\n", note="defines its own check")
s(A, "fail", solution=STEAL,
  note="hunts for the nonce: frames, tracebacks, gc, settrace, /proc/self/mem, ctypes, a child reading the parent's memory")
U = "fixture/sorted_unique"
s(U, "pass", "    return sorted(set(xs))\n", note="correct")
s(U, "fail", "    return sorted(xs)\n", note="wrong")
s(U, "pass", "    import collections, enum, typing, warnings\n    Pair = collections.namedtuple('Pair', 'a b')\n"
  "    warnings.warn('x')\n    return sorted(set(xs))\n", note="stdlib that asks for frames still works")
M = "fixture/mbpp_square"
s(M, "pass", "    return n * n\n", note="correct")
s(M, "fail", "    return n + n\n", note="wrong")
s(M, "error", "    return n * 2\nx = '''\n", note="opens a string to swallow the test")
J = "fixture_js_max"
s(J, "pass", "  return Math.max(...l);\n}\n", note="correct")
s(J, "fail", "  return l[0];\n}\n", note="wrong")
s(J, "error", "  return l[0];\n}\nprocess.exit(0);\n", note="process.exit(0) before the tests")
s(J, "fail", "  return l[0];\n}\nglobalThis.test = () => {};\n", note="replaces the test function")
s(J, "error", "  return l[0];\n}\n/*\n", note="opens a comment to swallow the test")
C = "fixture_cpp_sum"
s(C, "pass", "    long s = 0;\n    for (long x : v) s += x;\n    return s;\n", note="correct")
s(C, "fail", "    return v.size();\n", note="wrong")
s(C, "compile_error", "    return undefined_name;\n", note="does not compile")
s(C, "error", "    exit(0);\n", note="exit(0) before the tests")
s(C, "fail", "    static int once = atexit([] { _exit(0); });\n    return 0;\n", note="an atexit handler that exits 0")
K = "fixture_c_twice"
s(K, "pass", "    return 2 * x;\n", note="correct")
s(K, "fail", "    return x + 2;\n", note="wrong")
s(K, "error", "    int *p = 0;\n    return *p;\n", note="crashes")

with open(os.path.join(HERE, "problems.jsonl"), "w") as f:
    for p in P:
        f.write(json.dumps(p) + "\n")
with open(os.path.join(HERE, "samples.jsonl"), "w") as f:
    for d in S:
        f.write(json.dumps(d) + "\n")
