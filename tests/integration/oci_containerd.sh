#!/bin/bash
# containerd (Debian's) with ctr run --runc-binary pointing at moat-oci:
# an image made here as an OCI archive (a busybox root, no registry),
# imported with ctr image import; run with its exit status, a detached
# task, exec, kill, delete. containerd runs as root: a daemon of this
# test's own, with its own socket, root and state folders.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

if ! is_root; then
	t_na "containerd on moat-oci" "containerd runs as root"
	exit 0
fi
BB=$(command -v busybox || true)
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
	t_skip "containerd on moat-oci" "containerd is not installed (Debian: containerd)"
	exit 0
fi
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "containerd on moat-oci" "needs a static busybox (Debian: busybox-static) for the image"
	exit 0
fi

mkdir -p bin img/bin img/etc img/proc img/dev img/sys img/tmp
ln -sf "$MOAT" bin/moat-oci
cp "$BB" img/bin/busybox
for c in sh echo id sleep cat; do ln -sf busybox "img/bin/$c"; done
# An OCI image archive: one layer, its config, a manifest, an index.
python3 - img image.tar <<'PY'
import hashlib, io, json, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    blobs["blobs/sha256/" + d] = data
    return "sha256:" + d
blobs = {}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    t.add(src, arcname=".", filter=lambda i: (setattr(i, "uid", 0), setattr(i, "gid", 0), i)[2])
layer = buf.getvalue()
ldig = blob(layer)
cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["sh"]},
                  "rootfs": {"type": "layers", "diff_ids": [ldig]}}).encode()
cdig = blob(cfg)
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdig, "size": len(cfg)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ldig, "size": len(layer)}]}).encode()
mdig = blob(man)
index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": mdig, "size": len(man), "annotations": {"org.opencontainers.image.ref.name": "localhost/moat-bb:1"}}]}).encode()
with tarfile.open(out, "w") as t:
    for name, data in list(blobs.items()) + [("index.json", index), ("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')]:
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
PY

cat >config.toml <<TOML
version = 2
root = "$MOAT_TDIR/ctrd-root"
state = "$MOAT_TDIR/ctrd-state"
[grpc]
  address = "$MOAT_TDIR/ctrd.sock"
TOML
containerd --config config.toml >ctrd.log 2>&1 &
CPID=$!
trap 'kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null' EXIT
C=(ctr -a "$MOAT_TDIR/ctrd.sock")
for _ in $(seq 100); do "${C[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done

"${C[@]}" image import --base-name localhost/moat-bb image.tar >import.out 2>&1
t_match "ctr image import of a locally made archive" 'localhost/moat-bb:1' "$("${C[@]}" image ls -q 2>&1)"
R=(--runc-binary "$MOAT_TDIR/bin/moat-oci")

out=$(timeout 120 "${C[@]}" run --rm "${R[@]}" localhost/moat-bb:1 r1 sh -c 'echo hi; id -u; exit 4' 2>&1)
rc=$?
t_eq "ctr run: output and exit status" "hi 0 4" "$(echo $out) $rc"

timeout 120 "${C[@]}" run -d "${R[@]}" localhost/moat-bb:1 r2 sleep 1000 >/dev/null 2>&1
t_match "ctr run -d: the task runs" 'r2 +[0-9]+ +RUNNING' "$("${C[@]}" task ls 2>&1)"
out=$(timeout 60 "${C[@]}" task exec --exec-id e1 r2 sh -c 'echo in-exec; exit 5' 2>&1)
rc=$?
t_eq "ctr task exec: output and exit status" "in-exec 5" "$out $rc"
timeout 60 "${C[@]}" task kill -s SIGKILL r2 >/dev/null 2>&1
for _ in $(seq 100); do "${C[@]}" task ls 2>&1 | grep -q 'r2.*STOPPED' && break; sleep 0.1; done
t_match "ctr task kill: the task stopped" 'r2 +[0-9]+ +STOPPED' "$("${C[@]}" task ls 2>&1)"
t_check "ctr task rm" timeout 60 "${C[@]}" task rm r2
t_check "ctr container rm" timeout 60 "${C[@]}" container rm r2
# A pod's network namespace as containerd hands it over (the CRI's
# WithLinuxNamespace, here ctr's --with-ns): made by the test as a CNI
# plugin makes it, an address on it; joined only under the example pod
# policy (network.mode: pod), refused without it.
NS="moat-ctr-$$"
if ip netns add "$NS"; then
	ip -n "$NS" link set lo up
	ip -n "$NS" addr add 10.213.78.2/32 dev lo
	PODPOL="$MOAT_STAGE/examples/kubernetes/pod-network-policy.yaml"
	out=$(timeout 120 "${C[@]}" run --rm "${R[@]}" --with-ns "network:/run/netns/$NS" \
		--annotation "dev.moat.policy=$PODPOL" localhost/moat-bb:1 r3 cat /proc/net/fib_trie 2>&1)
	rc=$?
	t_eq "ctr run --with-ns network:/run/netns/NS under network.mode: pod: runs" "0" "$rc"
	t_match "it is in the pod's network namespace (its address)" '10\.213\.78\.2' "$out"
	out=$(timeout 120 "${C[@]}" run --rm "${R[@]}" --with-ns "network:/run/netns/$NS" localhost/moat-bb:1 r4 true 2>&1)
	rc=$?
	t_match "without network.mode: pod: refused, naming the opt-in" \
		"^[1-9][0-9]* .*linux.namespaces\\[[0-9]\\].path: /run/netns/$NS is not the network namespace of a moat-oci container.*network.mode: pod" \
		"$rc $(echo $out)"
	"${C[@]}" container rm r4 >/dev/null 2>&1
	ip netns delete "$NS"
else
	t_fail "ip netns add" "cannot make a network namespace"
fi
t_eq "nothing of moat-oci's is left" "" "$(ls "$MOAT_TDIR/ctrd-state/io.containerd.runtime.v2.task/default" 2>/dev/null)"
