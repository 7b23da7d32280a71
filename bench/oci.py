#!/usr/bin/env python3
"""moat-oci against runc, measured interleaved in the same run (make bench).

Two scenarios, each run alternately with either runtime so that load swings
hit both alike; medians and their ratio are reported:

  cycle   `create` + `start` + wait + `delete` of one bundle whose process
          is busybox `true`, the runtime driven directly as podman drives it;
  podman  `podman run --rm --network none IMAGE /bin/true` with --runtime at
          each (podman's own storage under a temporary folder, the image
          imported from a tarball made here).

Needs root (both runtimes as podman root uses them), runc, a static busybox;
podman for the second. What is missing is said, and that scenario skipped.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def busybox():
    bb = shutil.which("busybox")
    if not bb:
        return None
    out = subprocess.run(["ldd", bb], capture_output=True, text=True)
    return bb if "not a dynamic" in (out.stdout + out.stderr) else None


def make_rootfs(d, bb):
    for sub in ("bin", "etc", "proc", "dev", "sys", "tmp"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    shutil.copy(bb, os.path.join(d, "bin", "busybox"))
    for c in ("sh", "true"):
        os.symlink("busybox", os.path.join(d, "bin", c))


def make_bundle(d, bb):
    make_rootfs(os.path.join(d, "rootfs"), bb)
    ns = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]
    cfg = {
        "ociVersion": "1.0.2",
        "root": {"path": "rootfs"},
        "process": {"args": ["/bin/true"], "env": ["PATH=/bin"], "cwd": "/"},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "linux": {"namespaces": ns},
    }
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)


def cycle(rt, root, bundle, n):
    """One create, start, wait for the end, delete: seconds."""
    cid = f"bench-{os.getpid()}-{n}"
    t0 = time.monotonic()
    base = [rt, "--root", root]
    subprocess.run(base + ["create", "--bundle", bundle, cid], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(base + ["start", cid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(20000):
        st = subprocess.run(base + ["state", cid], capture_output=True, text=True)
        if st.returncode != 0 or json.loads(st.stdout).get("status") == "stopped":
            break
    subprocess.run(base + ["delete", "--force", cid], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def report(name, a_name, a, b_name, b):
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"oci {name}: {a_name} median {ma * 1000:.0f} ms, {b_name} median {mb * 1000:.0f} ms, "
          f"ratio {ma / mb:.2f} ({len(a)} runs each, interleaved; load {os.getloadavg()[0]:.1f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moat", required=True, help="moat's binary (moat-oci is `moat oci`)")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("oci: not root; the runtime scenarios (moat-oci against runc) do not run")
        return 0
    runc = shutil.which("runc")
    bb = busybox()
    if not runc or not bb:
        print("oci: runc or a static busybox is absent; the runtime scenarios do not run")
        return 0
    tmp = tempfile.mkdtemp(prefix="moat-bench-oci.")
    try:
        link = os.path.join(tmp, "moat-oci")
        os.symlink(os.path.abspath(args.moat), link)
        bundle = os.path.join(tmp, "bundle")
        make_bundle(bundle, bb)
        rts = {"moat-oci": link, "runc": runc}
        times = {k: [] for k in rts}
        for i in range(args.runs):
            for name, rt in (list(rts.items()) if i % 2 == 0 else list(rts.items())[::-1]):
                times[name].append(cycle(rt, os.path.join(tmp, "state-" + name), bundle, i))
        report("create+start+delete", "moat-oci", times["moat-oci"], "runc", times["runc"])

        podman = shutil.which("podman")
        if not podman:
            print("oci podman: podman is absent; the podman scenario does not run")
            return 0
        img = os.path.join(tmp, "img")
        make_rootfs(img, bb)
        tar = os.path.join(tmp, "img.tar")
        subprocess.run(["tar", "--owner=0", "--group=0", "--numeric-owner", "-C", img, "-cf", tar, "."], check=True)
        p = [podman, "--root", os.path.join(tmp, "storage"), "--runroot", os.path.join(tmp, "runroot"),
             "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs"]
        subprocess.run(p + ["import", tar, "localhost/moat-bench:1"], check=True, capture_output=True)
        # The same limits for both: podman's default open-files limit can
        # exceed a host's hard one, which runc then fails to set.
        run = ["run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
               "localhost/moat-bench:1", "/bin/true"]
        times = {k: [] for k in rts}
        for i in range(args.runs):
            for name, rt in (list(rts.items()) if i % 2 == 0 else list(rts.items())[::-1]):
                t0 = time.monotonic()
                r = subprocess.run(p + ["--runtime", rt] + run, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"oci podman: {name} failed: {r.stderr.strip()[-300:]}")
                    return 1
                times[name].append(time.monotonic() - t0)
        report("podman run --rm", "moat-oci", times["moat-oci"], "runc", times["runc"])
        subprocess.run(p + ["rmi", "-af"], capture_output=True)
        return 0
    finally:
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
