#!/bin/bash
# linux.cgroupsPath (cgroup.c's moat_cgroup_req, oci.c): as root, the
# container's cgroup is made at the path the bundle gives, from each
# hierarchy's root ("/a/b") or below the runtime's own cgroup ("a/b"), with
# the spec's limits in it, holds the container's processes, and goes on
# delete with every folder moat made above it. Refused: a path that climbs
# out with "..", systemd's "slice:prefix:name" form, a cgroup that exists
# already; rootless, a path outside a cgroup delegated to the user. Nothing
# is left in the host's hierarchies.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci cgroupsPath" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }

# bundle DIR CGROUPS_PATH: a sleeping container whose cgroup is there, with
# a memory, pids and cpu limit.
bundle() {
	mkdir -p "$1/rootfs/bin"
	cp "$BB" "$1/rootfs/bin/busybox"
	ln -sf busybox "$1/rootfs/bin/sleep"
	cat >"$1/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sleep","1000"],"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}],
  "cgroupsPath":"$2",
  "resources":{"memory":{"limit":67108864},"pids":{"limit":40},
   "cpu":{"shares":512,"quota":25000,"period":50000}}}}
JSON
}

# Where the host's hierarchies are: v1 (one per controller) or v2.
if [ -d /sys/fs/cgroup/pids ] && [ -d /sys/fs/cgroup/memory ]; then
	V=1
	dir() { echo "/sys/fs/cgroup/$1$2"; } # CONTROLLER PATH
	mem_file=memory.limit_in_bytes
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	V=2
	dir() { echo "/sys/fs/cgroup$2"; }
	mem_file=memory.max
else
	t_skip "oci cgroupsPath" "no cgroup file system at /sys/fs/cgroup"
	exit 0
fi
top="moat-oci-cg-$$-$RANDOM"
# left_behind: any folder of this test's name still in a hierarchy.
left_behind() { find /sys/fs/cgroup -maxdepth 8 -type d -name "$top*" 2>/dev/null; }

if ! is_root; then
	# Rootless: no v1 hierarchy is delegated to a user, and a v2 path
	# from the root is outside the user's delegated subtree.
	bundle b1 "/$top/ctr"
	oci create --bundle b1 c1 </dev/null >/dev/null 2>c1.err
	t_eq "rootless: a cgroupsPath outside the delegated subtree fails create" "1" "$?"
	t_match "rootless: the reason names delegation" "cgroupsPath /$top/ctr: .*(not inside a cgroup delegated to uid|no cgroup is usable)" "$(cat c1.err)"
	oci delete --force c1 >/dev/null 2>&1
	t_eq "rootless: nothing is left in the hierarchies" "" "$(left_behind)"
	exit 0
fi

# --- absolute: from the hierarchy's root
bundle b1 "/$top/pod/ctr"
oci create --bundle b1 c1 </dev/null >/dev/null 2>c1.err
t_eq "create with an absolute cgroupsPath succeeds" "0 " "$? $(cat c1.err)"
m=$(dir memory "/$top/pod/ctr")
p=$(dir pids "/$top/pod/ctr")
t_eq "the memory limit is in the cgroup at the path" "67108864" "$(cat "$m/$mem_file" 2>&1)"
t_eq "the pids limit is in the cgroup at the path" "40" "$(cat "$p/pids.max" 2>&1)"
if [ $V = 1 ]; then
	c=$(dir cpu "/$top/pod/ctr")
	t_eq "the spec's cpu shares, quota and period are written as given" "512 25000 50000" \
		"$(cat "$c/cpu.shares" "$c/cpu.cfs_quota_us" "$c/cpu.cfs_period_us" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
else
	t_eq "the spec's cpu quota and period are written as given" "25000 50000" "$(cat "$(dir cpu "/$top/pod/ctr")/cpu.max" 2>&1)"
fi
oci start c1
t_match "the container's processes are in that cgroup" '^[0-9]+' "$(cat "$p/cgroup.procs" 2>&1)"
oci create --bundle b1 c2 </dev/null >/dev/null 2>c2.err
t_eq "a second container at the same path is refused" "1" "$?"
t_match "... as a cgroup that exists and is not its own" "exists and is not this container's" "$(cat c2.err)"
oci delete --force c2 >/dev/null 2>&1
t_match "... and the first container's cgroup still holds it" '^[0-9]+' "$(cat "$p/cgroup.procs" 2>&1)"
oci kill c1 KILL
oci delete --force c1 >/dev/null 2>&1
t_eq "delete removes the cgroup and the folders moat made above it" "" "$(left_behind)"

# --- a parent that exists (kubelet's pod cgroup) is used, and kept
mkdir "$(dir pids "/$top")"
bundle b2 "/$top/ctr"
oci create --bundle b2 c3 </dev/null >/dev/null 2>c3.err
t_eq "create below an existing parent succeeds" "0 " "$? $(cat c3.err)"
oci delete --force c3 >/dev/null 2>&1
t_eq "delete keeps the parent moat did not make" "yes no" \
	"$([ -d "$(dir pids "/$top")" ] && echo yes || echo no) $([ -d "$(dir pids "/$top/ctr")" ] && echo yes || echo no)"
rmdir "$(dir pids "/$top")"

# --- relative: below the runtime's own cgroup (the caller's, here)
own=$(awk -F: '$2 ~ /(^|,)pids(,|$)/ || ($1 == "0" && $2 == "") {print $3; exit}' /proc/self/cgroup)
[ "$own" = / ] && own=
bundle b3 "$top-rel/ctr"
oci create --bundle b3 c4 </dev/null >/dev/null 2>c4.err
t_eq "create with a relative cgroupsPath succeeds" "0 " "$? $(cat c4.err)"
t_eq "the relative path is below the runtime's own cgroup" "40" "$(cat "$(dir pids "$own/$top-rel/ctr")/pids.max" 2>&1)"
oci delete --force c4 >/dev/null 2>&1
t_eq "... and goes on delete" "" "$(left_behind)"

# --- refused paths never reach the file system
for bad in "/$top/../../x" "$top.slice:cri:ctr" "/"; do
	bundle b4 "$bad"
	oci create --bundle b4 c5 </dev/null >/dev/null 2>c5.err
	t_eq "cgroupsPath \"$bad\" is refused" "1" "$?"
	oci delete --force c5 >/dev/null 2>&1
done
bundle b4 "/$top/../../x"
oci create --bundle b4 c5 </dev/null >/dev/null 2>c5.err
t_match "\"..\" is refused as climbing out of the hierarchy" 'would climb out of the cgroup hierarchy' "$(cat c5.err)"
bundle b4 "$top.slice:cri:ctr"
oci create --bundle b4 c5 </dev/null >/dev/null 2>c5.err
t_match "systemd's form is refused naming the driver" 'cgroupfs driver only' "$(cat c5.err)"
oci --systemd-cgroup create --bundle b4 c5 </dev/null >/dev/null 2>c5.err
t_match "--systemd-cgroup is refused naming the driver" 'cgroupfs cgroup driver only' "$(cat c5.err)"
t_eq "nothing is left in the hierarchies" "" "$(left_behind)"
