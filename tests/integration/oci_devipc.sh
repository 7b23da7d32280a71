#!/bin/bash
# The spec's /dev/shm and /dev/mqueue, and the source names of moat's own
# mounts (oci.c own_mount, mount.c setup_dev_ipc): a bundle asking for a
# tmpfs at /dev/shm gets one of its own, nosuid, nodev, noexec, its size
# capped as every tmpfs of a spec; one asking for mqueue at /dev/mqueue
# gets its ipc namespace's queues there; mountinfo shows the sources the
# spec names. Without them, /dev/shm is moat's link to /tmp.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci /dev/shm and /dev/mqueue" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }

# bundle DIR MOUNTS_JSON SCRIPT
bundle() {
	mkdir -p "$1/rootfs/bin"
	cp "$BB" "$1/rootfs/bin/busybox"
	for c in sh cat grep dd mount ls readlink awk; do ln -sf busybox "$1/rootfs/bin/$c"; done
	cat >"$1/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sh","-c","$3"],"env":["PATH=/bin"],"cwd":"/"},
 "mounts":$2,
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
}

# run ID: create, start, and the container's output once it has stopped.
run() {
	oci create --bundle "$1" "$1" </dev/null >"$1.out" 2>"$1.err" || { cat "$1.err"; return 1; }
	oci start "$1" 2>>"$1.err"
	for _ in $(seq 300); do
		oci state "$1" 2>/dev/null | grep -q '"stopped"' && break
		sleep 0.1
	done
	oci delete --force "$1" >/dev/null 2>&1
	cat "$1.out"
}

mounts='[{"destination":"/proc","type":"proc","source":"proc"},
 {"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","strictatime","mode=755","size=65536k"]},
 {"destination":"/dev/pts","type":"devpts","source":"devpts","options":["nosuid","noexec","newinstance","ptmxmode=0666","mode=0620","gid=5"]},
 {"destination":"/dev/shm","type":"tmpfs","source":"shm","options":["nosuid","noexec","nodev","mode=1777","size=1m"]},
 {"destination":"/dev/mqueue","type":"mqueue","source":"mqueue","options":["nosuid","noexec","nodev"]}]'
# Each line: MOUNTPOINT FSTYPE SOURCE OPTIONS, from the container's mountinfo.
script='awk '"'"'{for (i = 7; $i != \"-\"; i++); print $5, $(i+1), $(i+2), $6}'"'"' /proc/self/mountinfo; dd if=/dev/zero of=/dev/shm/small bs=1024 count=512 2>/dev/null; echo small=$?; rm -f /dev/shm/small; dd if=/dev/zero of=/dev/shm/big bs=1024 count=2048 2>/dev/null; echo dd=$?; ls -ld /dev/shm'
bundle b1 "$mounts" "$script"
out=$(run b1)
t_match "/dev/shm is a tmpfs of its own, with the spec's source" '^/dev/shm tmpfs shm [^ ]*nosuid,nodev,noexec' "$out"
t_match "/dev/mqueue is the mqueue file system, with the spec's source" '^/dev/mqueue mqueue mqueue [^ ]*nosuid,nodev,noexec' "$out"
t_match "/proc shows the spec's source" '^/proc proc proc ' "$out"
t_match "/dev shows the spec's source" '^/dev tmpfs tmpfs ' "$out"
t_match "/dev/pts shows the spec's source" '^/dev/pts devpts devpts ' "$out"
t_match "/dev/shm is writable: 512 KB fit" '^small=0$' "$out"
t_match "/dev/shm's size is the spec's 1m: 2 MB do not fit" '^dd=1$' "$out"
t_match "/dev/shm is a folder, not the link to /tmp" '^drwxrwxrwt ' "$(grep -E ' /dev/shm$' <<<"$out")"

bundle b2 '[{"destination":"/proc","type":"proc","source":"proc"}]' 'readlink /dev/shm; ls /dev/mqueue 2>&1 | head -1'
out=$(run b2)
t_match "without the spec asking, /dev/shm is moat's link to /tmp" '^/tmp$' "$out"

bundle b3 '[{"destination":"/dev/shm","type":"tmpfs","source":"../x y","options":["size=1m"]}]' 'true'
oci create --bundle b3 b3 </dev/null >/dev/null 2>b3.err
t_match "a source that is not a plain name is refused, named" 'mounts\[0\]\.source: .* is not a plain name' "$(cat b3.err)"
oci delete --force b3 >/dev/null 2>&1
bundle b4 '[{"destination":"/dev/shm","type":"tmpfs","source":"shm","options":["suid"]}]' 'true'
oci create --bundle b4 b4 </dev/null >/dev/null 2>b4.err
t_match "/dev/shm takes no suid, as no tmpfs of a spec" 'suid is refused' "$(cat b4.err)"
oci delete --force b4 >/dev/null 2>&1
