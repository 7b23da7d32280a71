#!/bin/bash
# Attacks on the OCI runtime's boundary (oci.c, oci-spec.c): a bundle is
# the caller's, but its root filesystem is an image's, and an image can
# hold links planted to send what the runtime makes or mounts onto the
# host (runc CVE-2021-30465 and its family). Each attack must be refused
# and leave the host's folder untouched.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci attacks" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi
R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }

# A host folder that stands for anything outside the bundle.
HOST="$MOAT_TDIR/host"
mkdir -p "$HOST"
echo original >"$HOST/file"
host_sum() { (cd "$HOST" && find . -printf '%p %y %s\n' | sort | md5sum); }
before=$(host_sum)

bundle() { # DIR MOUNTS_JSON
	local d="$1"
	mkdir -p "$d/rootfs/bin"
	cp "$BB" "$d/rootfs/bin/busybox"
	ln -sf busybox "$d/rootfs/bin/sh"
	cat >"$d/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sh","-c","echo pwned > /tmp/x; echo pwned > /data/x"],"env":["PATH=/bin"],"cwd":"/"},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"}$2],
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
}

attempt() { # NAME DIR REGEX
	oci create --bundle "$2" "a$$" </dev/null >/dev/null 2>att.err
	local rc=$?
	oci start "a$$" >/dev/null 2>&1
	sleep 0.2
	oci delete --force "a$$" >/dev/null 2>&1
	t_match "$1: refused" "$3" "$rc $(cat att.err)"
	t_eq "$1: the host folder is unchanged" "$before" "$(host_sum)"
}

# moat's /tmp mount point planted as a link to the host.
bundle p1 ''
ln -s "$HOST" p1/rootfs/tmp
attempt "a planted /tmp link" p1 '^1 .*tmp.*symbolic link'

# /proc planted as a relative link climbing out of the root.
bundle p2 ''
ln -s ../../../../../../../../.. p2/rootfs/proc
attempt "a planted /proc link that climbs out" p2 '^1 .*proc.*symbolic link'

# A bind's mount point under a planted link.
bundle p3 ',{"destination":"/data/sub","type":"bind","source":"src","options":["rbind"]}'
mkdir -p p3/src
ln -s "$HOST" p3/rootfs/data
attempt "a bind's mount point through a planted link" p3 '^1 .*mounts\[1\].*symbolic link'

# A bind's source, relative to the bundle, that a link in the image sends
# to the host.
bundle p4 ',{"destination":"/data","type":"bind","source":"rootfs/leak","options":["rbind"]}'
ln -s "$HOST" p4/rootfs/leak
attempt "a bind source leading out of the bundle" p4 '^1 .*mounts\[1\].source.*leads out of the bundle'

# A spec tmpfs whose mount point a planted link sends to the host: the
# mount point would be made there.
bundle p5 ',{"destination":"/data/t","type":"tmpfs","source":"tmpfs","options":["size=1m"]}'
ln -s "$HOST" p5/rootfs/data
attempt "a tmpfs mount point through a planted link" p5 '^1 .*mounts\[1\].*symbolic link'

# maskedPaths and readonlyPaths through a planted link: the mask or the
# read-only remount would land on what the link names.
bundle p6 ''
sed -i 's|"linux":{|"linux":{"maskedPaths":["/m/file"],|' p6/config.json
ln -s "$HOST" p6/rootfs/m
attempt "a masked path through a planted link" p6 '^1 .*linux.maskedPaths: /m/file goes through a symbolic link'
bundle p7 ''
sed -i 's|"linux":{|"linux":{"readonlyPaths":["/m"],|' p7/config.json
ln -s "$HOST" p7/rootfs/m
attempt "a read-only path that is a planted link" p7 '^1 .*linux.readonlyPaths: /m goes through a symbolic link'

# Namespaced sysctls change the container's copies only; a host one is
# refused (tests/integration/oci.sh).
bundle p8 ''
sed -i 's|"linux":{|"linux":{"sysctl":{"net.ipv4.ip_forward":"1","net.core.somaxconn":"17","kernel.shmmni":"77"},|' p8/config.json
hv=$(cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/core/somaxconn /proc/sys/kernel/shmmni | tr '\n' ' ')
oci create --bundle p8 "n$$" </dev/null >/dev/null 2>p8.err
t_eq "namespaced sysctls: the container is created" "0" "$?"
oci delete --force "n$$" >/dev/null 2>&1
t_eq "namespaced sysctls leave the host's values" "$hv" \
	"$(cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/core/somaxconn /proc/sys/kernel/shmmni | tr '\n' ' ')"

# Capabilities beyond moat's set are not granted: the process tries a
# privileged act (setting the host name needs CAP_SYS_ADMIN in its uts
# namespace) and fails.
mkdir -p c1/rootfs/bin
cp "$BB" c1/rootfs/bin/busybox
ln -sf busybox c1/rootfs/bin/sh
ln -sf busybox c1/rootfs/bin/hostname
cat >c1/config.json <<'JSON'
{"ociVersion":"1.0.2","root":{"path":"rootfs"},"hostname":"before",
 "process":{"user":{"uid":0,"gid":0},"args":["sh","-c","hostname after; echo rc=$?; hostname"],"env":["PATH=/bin"],"cwd":"/",
  "capabilities":{"bounding":["CAP_SYS_ADMIN"],"effective":["CAP_SYS_ADMIN"],"permitted":["CAP_SYS_ADMIN"],
   "inheritable":["CAP_SYS_ADMIN"],"ambient":["CAP_SYS_ADMIN"]}},
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
oci create --bundle c1 "c$$" </dev/null >cap.out 2>&1
oci start "c$$"
for _ in $(seq 300); do grep -q '^before' cap.out 2>/dev/null && break; sleep 0.1; done
oci delete --force "c$$" >/dev/null 2>&1
t_match "CAP_SYS_ADMIN asked for in every set is not granted" 'rc=1.*before' "$(tr '\n' ' ' <cap.out)"

# process.user uid 0 is the id of moat's one unprivileged user, not root:
# a setuid-root program gains nothing (SECBIT_NOROOT, no_new_privs), and
# the host's root-owned files stay out of reach (as root of the host they
# are unmapped; rootless, the test's own user owns them).
mkdir -p u1/rootfs/bin u1/rootfs/suid
cp "$BB" u1/rootfs/bin/busybox
ln -sf busybox u1/rootfs/bin/sh
cp "$BB" u1/rootfs/suid/busybox && chmod 4755 u1/rootfs/suid/busybox
for c in grep unshare; do ln -sf busybox "u1/rootfs/suid/$c"; done
cat >u1/config.json <<'JSON'
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"user":{"uid":0,"gid":0},"args":["sh","-c","/suid/grep -E '^Cap(Eff|Prm)' /proc/self/status; /suid/unshare -U true; echo unshare=$?"],"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
oci create --bundle u1 "u$$" </dev/null >u1.out 2>&1
oci start "u$$"
for _ in $(seq 300); do grep -q '^unshare=' u1.out 2>/dev/null && break; sleep 0.1; done
oci delete --force "u$$" >/dev/null 2>&1
t_match "process.user uid 0 with a setuid program: no capability, no user namespace" \
	'CapEff:	0000000000000000 CapPrm:	0000000000000000 .*unshare=1' "$(sort u1.out | tr '\n' ' ')"

# The spec's own seccomp filter can only narrow: allowing by name a call
# moat's filter denies (unshare, for a user namespace) does not let it
# through; stacked filters keep the strictest verdict.
mkdir -p s1/rootfs/bin
cp "$BB" s1/rootfs/bin/busybox
ln -sf busybox s1/rootfs/bin/sh
cat >s1/config.json <<'JSON'
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sh","-c","busybox unshare -U true; echo unshare=$?"],"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}],
  "seccomp":{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["unshare","setns","mount","ptrace"],"action":"SCMP_ACT_ALLOW"}]}}}
JSON
oci create --bundle s1 "s$$" </dev/null >s1.out 2>&1
oci start "s$$"
for _ in $(seq 300); do grep -q '^unshare=' s1.out 2>/dev/null && break; sleep 0.1; done
oci delete --force "s$$" >/dev/null 2>&1
t_match "a spec filter allowing unshare does not widen moat's" 'unshare=1' "$(tr '\n' ' ' <s1.out)"

# The container's user owns its own root (as root of the host, through an
# idmapped bind of the root in the keeper's mount namespace; rootless, the
# test's user owns it anyway): it writes there, and on disk what it wrote
# is the container user's. That ownership goes no further: a folder of
# another owner in the root stays out of its reach, a read-write bind of a
# host folder only host root may write is still refused, and the host's
# mount table never shows the idmapped root.
mkdir -p i1/rootfs/bin i1/rootfs/etc i1/rootfs/other
cp "$BB" i1/rootfs/bin/busybox
ln -sf busybox i1/rootfs/bin/sh
chmod 755 i1/rootfs/other
[ "$MOAT_MODE" = root ] && chown 4321:4321 i1/rootfs/other
cat >i1/config.json <<'JSON'
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sh","-c","echo w >/etc/made && echo wrote-root; echo w >/other/x && echo wrote-other; umask; busybox sleep 2"],"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
oci create --bundle i1 "i$$" </dev/null >i1.out 2>&1
oci start "i$$"
for _ in $(seq 300); do grep -q '^00' i1.out 2>/dev/null && break; sleep 0.1; done
host_idmapped=$(grep -c "$MOAT_TDIR/i1" /proc/self/mountinfo)
oci delete --force "i$$" >/dev/null 2>&1
t_match "the container's user writes into its own root" '^wrote-root' "$(cat i1.out)"
t_match "its processes start with umask 0022, as runc's" '^0022$' "$(cat i1.out)"
t_eq "on disk, what it wrote is owned by the container's user" "$(id -u):$(id -g)" "$(stat -c %u:%g i1/rootfs/etc/made 2>&1)"
t_eq "the host's mount table does not show the container's root" "0" "$host_idmapped"
if [ "$MOAT_MODE" = root ]; then
	t_nomatch "a folder of another owner in its root stays unwritable" 'wrote-other' "$(cat i1.out)"
	t_eq "nothing was written there" "no" "$([ -e i1/rootfs/other/x ] && echo yes || echo no)"
	mkdir -p rootonly && chmod 755 rootonly
	cp -r i1 i2
	sed -i 's|"linux":|"mounts":[{"destination":"/data","type":"bind","source":"'"$MOAT_TDIR"'/rootonly","options":["rbind","rw"]}],"linux":|' i2/config.json
	oci create --bundle i2 "j$$" </dev/null >/dev/null 2>i2.err
	t_match "a read-write bind of a folder only host root may write is still refused" 'not writable by the sandbox user' "$(cat i2.err)"
	oci delete --force "j$$" >/dev/null 2>&1
fi

# --- linux.cgroupsPath: a bundle names a cgroup that holds someone else's
# process (joining it would put the container under limits another writer
# sets, and delete would kill that process), or climbs out of the
# hierarchy with "..". Root only: rootless, no path outside the delegated
# subtree is made at all (oci_cgroup.sh).
if [ "$MOAT_MODE" = root ] && [ -d /sys/fs/cgroup/pids ]; then
	victim="/sys/fs/cgroup/pids/moat-oci-victim-$$"
	mkdir "$victim"
	sleep 600 &
	vpid=$!
	echo "$vpid" >"$victim/cgroup.procs"
	bundle g1 ''
	sed -i 's|"linux":{|"linux":{"cgroupsPath":"/moat-oci-victim-'$$'","resources":{"pids":{"limit":5}},|' g1/config.json
	oci create --bundle g1 "g$$" </dev/null >/dev/null 2>g1.err
	t_match "a cgroupsPath naming another's cgroup is refused" "exists and is not this container's" "$(cat g1.err)"
	oci delete --force "g$$" >/dev/null 2>&1
	t_eq "that cgroup's process survives, its limit untouched" "alive max" \
		"$(kill -0 "$vpid" 2>/dev/null && echo alive) $(cat "$victim/pids.max")"
	kill "$vpid"
	wait "$vpid" 2>/dev/null
	rmdir "$victim"
	bundle g2 ''
	sed -i 's|"linux":{|"linux":{"cgroupsPath":"/a/../../../../'"${MOAT_TDIR#/}"'/host/cg",|' g2/config.json
	oci create --bundle g2 "h$$" </dev/null >/dev/null 2>g2.err
	t_match "a cgroupsPath climbing out with .. is refused" 'would climb out of the cgroup hierarchy' "$(cat g2.err)"
	oci delete --force "h$$" >/dev/null 2>&1
	t_eq "nothing was made where it pointed" "no" "$([ -e "$HOST/cg" ] && echo yes || echo no)"
fi
