#!/usr/bin/env python3
"""Compares CPython regression modules run bare and inside moat.

  cpython.py MOAT PROFILE WORKDIR MODULE...

Runs each module with /usr/bin/python3 -m test --junit-xml, once on the host
(as an unprivileged user when started as root, like the command inside) and
once inside `moat run --profile PROFILE` (generous limits), and prints
one TAP line per module: ok when every test case that passed bare passed
inside too. Test cases listed in refused-PROFILE.txt (one
"test.MODULE.Class.test" a line, with a reason after " # ") are refused on
purpose and do not count.
Exit status 0 always; the TAP lines carry the verdict."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
# Test cases left out of both runs: AF_VSOCK tests hang in accept() on a
# host with a vsock device and no peer (the sandbox refuses AF_VSOCK, so
# they skip inside).
IGNORE = ["*VSOCK*"]


def results(xml_path):
    out = {}
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        bad = any(c.tag in ("failure", "error") for c in tc)
        skipped = any(c.tag == "skipped" for c in tc)
        out[name] = "fail" if bad else ("skip" if skipped else "pass")
    return out


def refused(profile):
    path = os.path.join(HERE, "refused-%s.txt" % profile)
    names = set()
    if os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line)
    return names


def main():
    moat, profile, work, modules = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    mode = os.environ.get("MOAT_MODE", "?")
    skip_ok = refused(profile)
    for mod in modules:
        out = os.path.join(work, "out-%s-%s" % (profile, mod))
        os.makedirs(out, exist_ok=True)
        os.chmod(out, 0o777)
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "LANG": "C.UTF-8"}
        ign = [a for p in IGNORE for a in ("-i", p)]
        # Bare as an unprivileged user, as the command runs inside (root's
        # tests, such as chown to another user, skip in both).
        bare_dir = os.path.join(work, "bare-%s" % mod)
        os.makedirs(bare_dir, exist_ok=True)
        os.chmod(bare_dir, 0o777)
        bare_xml = os.path.join(bare_dir, "r.xml")
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.getuid() == 0 else []
        env["HOME"] = bare_dir
        # One bare run serves every profile of this invocation's workdir.
        if not results(bare_xml):
            subprocess.run(drop + ["nice", "/usr/bin/python3", "-m", "test", "-q", "--timeout", "900"] + ign +
                           ["--junit-xml", bare_xml, mod],
                           cwd=bare_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1200)
        subprocess.run(["nice", moat, "run", "--profile", profile, "--out", out, "--mem", "2G", "--pids", "1024",
                        "--time", "1200s", "--tmp-size", "1G", "--fsize", "unlimited", "--cwd", "/tmp", "--", "/usr/bin/python3", "-m",
                        "test", "-q", "--timeout", "900"] + ign + ["--junit-xml", "/out/r.xml", mod],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1300)
        bare = results(bare_xml)
        inside = results(os.path.join(out, "r.xml"))
        label = "[%s] compat: cpython %s %s" % (mode, profile, mod)
        if not bare:
            print("not ok - %s: no result from the bare run (libpython3.11-testsuite?)" % label)
            continue
        if inside is None:
            print("not ok - %s: no result from inside moat" % label)
            continue
        passed_bare = [n for n, v in bare.items() if v == "pass"]
        regressed = [n for n in passed_bare if inside.get(n) != "pass" and n not in skip_ok]
        if regressed:
            print("not ok - %s: %d of %d that pass bare fail inside" % (label, len(regressed), len(passed_bare)))
            for n in regressed[:15]:
                print("#   %s.%s: %s" % (mod, n, inside.get(n, "missing")))
        else:
            refused_here = [n for n in passed_bare if inside.get(n) != "pass"]
            print("ok - %s: %d tests pass bare, all pass inside%s" % (
                label, len(passed_bare),
                " but %d refused on purpose (refused-%s.txt)" % (len(refused_here), profile) if refused_here else ""))


if __name__ == "__main__":
    main()
