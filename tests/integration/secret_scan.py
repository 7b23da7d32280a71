#!/usr/bin/env python3
"""Looks for secret values in processes: their environment, command line
and every readable byte of memory.

The values are never held in plain form by this scanner (it would find
itself, and it may run inside the sandbox it examines): each is given as
the hex of the value with every byte XOR 0x5a, and memory is translated
the same way before it is searched.

  secret_scan.py --needle HEX [--needle HEX ...] (--pids PID,... | --tree PID | --all)

--tree PID: all descendants of PID (not PID itself: there, the supervisor); --all: every process in /proc but
this one. Prints one JSON object: for each pid, its command line (masked
values are never printed), how many bytes of memory could be read (regions
over 1 GiB, a sanitizer's shadow reservations, are counted apart), whether
environ was readable, and the needles found, by index, and where.
"""
import argparse
import json
import os
import sys

MASK = bytes(b ^ 0x5A for b in range(256))


def descendants(root):
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the ppid is
        # the second field after the last ')'.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def find(data, needles, where, hits):
    masked = data.translate(MASK)
    for i, n in enumerate(needles):
        at = masked.find(n)
        if at >= 0:
            hits.append({"needle": i, "where": where, "offset": at})


# A sanitizer build's shadow memory is a reservation of terabytes, almost
# all of it never touched; regions larger than this are counted, not read.
HUGE = 1 << 30


def scan(pid, needles):
    r = {"cmdline": "", "environ": False, "memory": 0, "regions": 0, "skipped_huge": 0, "hits": []}
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        find(cmd, needles, "cmdline", r["hits"])
        r["cmdline"] = cmd.replace(b"\0", b" ").decode(errors="replace")[:80]
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
        r["environ"] = True
        find(env, needles, "environ", r["hits"])
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        return r
    with mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1]:
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if hi - lo > HUGE:
                r["skipped_huge"] += 1
                continue
            # Reading in pieces keeps this scanner small; a needle cut at
            # a piece's edge is found in the overlap.
            step, overlap = 1 << 20, 8192
            a = lo
            while a < hi:
                b = min(hi, a + step + overlap)
                try:
                    mem.seek(a)
                    data = mem.read(b - a)
                except (OSError, OverflowError, ValueError):
                    break
                if not data:
                    break
                r["memory"] += min(len(data), step)
                find(data, needles, fields[5] if len(fields) > 5 else "anon", r["hits"])
                a += step
            r["regions"] += 1
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--needle", action="append", required=True)
    ap.add_argument("--pids")
    ap.add_argument("--tree", type=int)
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    needles = [bytes.fromhex(n) for n in a.needle]
    if a.pids:
        pids = [int(p) for p in a.pids.split(",")]
    elif a.tree:
        pids = descendants(a.tree)[1:]
    else:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    # The sandbox's own processes first: they may end while a larger one
    # (the init) is read.
    pids = sorted((p for p in pids if p != os.getpid()), reverse=True)
    out = {str(p): scan(p, needles) for p in pids}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
