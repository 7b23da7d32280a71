#!/usr/bin/env python3
"""Rewrites, from the host, the argument OLD of a process stopped in execve
(the exec gate holds it) to NEW of the same length: what a process allowed
to write another's memory could do while a person decides. Finds the
process by its stop in execve whose memory holds "push\\0OLD\\0"; prints
its pid. Exits 1 when none is found."""
import os
import sys

old, new = sys.argv[1].encode(), sys.argv[2].encode()
assert len(old) == len(new)
needle = b"push\0" + old + b"\0"
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        with open(f"/proc/{pid}/syscall") as f:
            nr = f.read().split()[0]
        if nr != "59":  # execve on x86_64
            continue
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
            for line in maps:
                rng, perms = line.split()[:2]
                if "w" not in perms:
                    continue
                lo, hi = (int(x, 16) for x in rng.split("-"))
                if hi - lo > 64 << 20:
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except OSError:
                    continue
                at = data.find(needle)
                if at >= 0:
                    mem.seek(lo + at + 5)
                    mem.write(new)
                    print(pid)
                    sys.exit(0)
    except (OSError, IndexError):
        continue
sys.exit(1)
