#!/bin/bash
# A pod on moat-oci, as Kubernetes makes one through containerd: a pause
# container first, then containers whose config.json joins its network,
# ipc and uts namespaces by path (linux.namespaces[].path =
# /proc/PID/ns/...). moat lets a container join only namespaces of another
# moat-oci container under the same --root (oci.c, join_resolve): the pod's
# containers then share the hostname, the loopback and System V IPC, each
# with its own mount and pid namespaces; the host's namespaces, another
# runtime root's (another user's) and a pid namespace are refused, naming
# the field.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci pod" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }
status() { oci state "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
wait_stopped() {
	for _ in $(seq 300); do [ "$(status "$1")" = stopped ] && return 0; sleep 0.1; done
	return 1
}

# bundle DIR ARGS_JSON NAMESPACES_JSON [HOSTNAME_MEMBER]
bundle() {
	local d="$1"
	mkdir -p "$d/rootfs/bin"
	cp "$BB" "$d/rootfs/bin/busybox"
	for c in sh echo cat sleep hostname nc ls readlink; do ln -sf busybox "$d/rootfs/bin/$c"; done
	cat >"$d/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"}$4,
 "process":{"args":$2,"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":$3}}
JSON
}
OWN='[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]'
# joined NET IPC UTS: a namespaces list joining those paths.
joined() {
	echo "[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"$1\"},{\"type\":\"ipc\",\"path\":\"$2\"},{\"type\":\"uts\",\"path\":\"$3\"}]"
}

# The pause container: a hostname, a listener on its loopback, a System V
# message queue.
bundle pause '["sh","-c","while true; do nc -l -p 8080 -e echo from-pause; done"]' "$OWN" ',"hostname":"pod-host"'
oci create --bundle pause pause </dev/null >pause.out 2>&1
oci start pause
t_eq "the pause container runs" "running" "$(status pause)"
PK=$(cat "$R/pause/init.pid" 2>/dev/null)
t_match "its keeper records its init's pid" '^[0-9]+$' "$PK"
for _ in $(seq 100); do [ -n "$(ls /proc/$PK/task 2>/dev/null)" ] && break; sleep 0.1; done
sleep 0.5

# A container of the pod, joining by /proc/PID/ns paths as the kubelet's
# runtime writes them.
bundle app '["sh","-c","echo host=$(hostname); echo | nc 127.0.0.1 8080; for n in net ipc pid mnt; do echo $n=$(readlink /proc/self/ns/$n); done; echo limit=$(cat /proc/sys/user/max_mnt_namespaces)"]' \
	"$(joined /proc/$PK/ns/net /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
oci create --bundle app app </dev/null >app.out 2>app.err
rc=$?
# Rootless, the keeper cannot open another sandbox's namespaces (its init
# is not dumpable): it gets them from that container's keeper, which
# opened them when it cloned its init.
t_eq "a container joining the pause container's namespaces is created" "0 " "$rc $(cat app.err)"
oci start app
wait_stopped app
out=$(cat app.out)
# The pause container's namespaces, as it sees them (rootless, its
# init's /proc/PID/ns cannot be read from outside).
PNS=$(oci exec pause sh -c 'for n in net ipc pid mnt; do echo $n=$(readlink /proc/self/ns/$n); done' 2>/dev/null)
ns() { echo "$PNS" | sed -n "s/^$1=//p" | sed 's/\[/\\[/;s/\]/\\]/'; }
t_match "it shares the pause container's hostname (uts)" '^host=pod-host' "$out"
t_match "it reaches the pause container's loopback listener (network)" '^from-pause' "$out"
t_match "its network namespace is the pause container's" "^net=$(ns net)" "$out"
t_match "its ipc namespace is the pause container's" "^ipc=$(ns ipc)" "$out"
t_nomatch "its pid namespace is its own" "^pid=$(ns pid)" "$out"
t_nomatch "its mount namespace is its own" "^mnt=$(ns mnt)" "$out"
t_match "the user namespace's namespace limits are zero again once it is set up" '^limit=0$' "$out"
t_eq "the pause container still runs" "running" "$(status pause)"
oci delete app
# podman builds the paths from the pid `state` reports, the keeper's:
# /proc/KEEPER/ns/net is the host's, and names the container's.
KP=$(oci state pause | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
bundle app2 '["sh","-c","echo host=$(hostname); echo net=$(readlink /proc/self/ns/net)"]' \
	"$(joined /proc/$KP/ns/net /proc/$KP/ns/ipc /proc/$KP/ns/uts)"
oci create --bundle app2 app2 </dev/null >app2.out 2>app2.err
oci start app2
wait_stopped app2
t_match "by the keeper's pid (as podman names it): the pause container's namespaces" \
	"^host=pod-host net=$(ns net)" "$(tr '\n' ' ' <app2.out) $(cat app2.err)"
oci delete app2
bundle h8 '["true"]' "$(joined /proc/$KP/ns/net /proc/$KP/ns/ipc /proc/$KP/ns/uts)"
"$MOAT" oci --root "$MOAT_TDIR/other-root" create --bundle h8 r3 </dev/null >/dev/null 2>r3.err
rc=$?
"$MOAT" oci --root "$MOAT_TDIR/other-root" delete --force r3 >/dev/null 2>&1
t_match "a keeper's pid seen from another runtime root is the host's namespace: refused" \
	'^1 .*linux.namespaces\[2\].path: /proc/[0-9]+/ns/net is the (host.s|runtime.s own) network namespace' "$rc $(cat r3.err)"

# refused NAME DIR REGEX: create fails with a message naming the field
# (rootless, the kernel's refusal to open the namespace comes first).
PD='linux.namespaces\[[0-9]\].path: /proc/[0-9]+/ns/[a-z]+: Permission denied'
refused() {
	oci create --bundle "$2" r1 </dev/null >/dev/null 2>r.err
	local rc=$?
	oci delete --force r1 >/dev/null 2>&1
	if [ "$MOAT_MODE" = rootless ]; then t_match "$1" "^1 .*($3|$PD)" "$rc $(cat r.err)"
	else t_match "$1" "^1 .*($3)" "$rc $(cat r.err)"; fi
}
bundle h1 '["true"]' "$(joined /proc/1/ns/net /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
refused "the host's network namespace is refused" h1 'linux.namespaces\[2\].path: /proc/1/ns/net(: Permission denied| is the host.s network namespace)'
bundle h2 '["true"]' "$(joined /proc/$PK/ns/net /proc/$PK/ns/ipc /proc/self/ns/uts)"
refused "the caller's own uts namespace is refused" h2 'linux.namespaces\[4\].path: /proc/self/ns/uts is not the uts namespace'
bundle h3 '["true"]' "$(joined /proc/$PK/ns/ipc /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
refused "a path of another type than the entry's is refused" h3 'linux.namespaces\[2\].path: .* is a namespace of type ipc, not net'
bundle h4 '["true"]' "[{\"type\":\"pid\",\"path\":\"/proc/$PK/ns/pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}]"
refused "joining a pid namespace is refused" h4 'linux.namespaces\[0\].path: joining the existing pid namespace'
bundle h5 '["true"]' "$(joined /proc/$PK/ns/net /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
sed -i 's|"cwd":"/"|"cwd":"/","user":{"uid":1000,"gid":1000}|' h5/config.json
refused "another user than the pause container's is refused" h5 'process.user: joining container pause.s namespaces'
# The same pause container seen from another runtime root (another
# caller's state): not one of that root's containers.
bundle h6 '["true"]' "$(joined /proc/$PK/ns/net /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
"$MOAT" oci --root "$MOAT_TDIR/other-root" create --bundle h6 r2 </dev/null >/dev/null 2>r2.err
rc=$?
"$MOAT" oci --root "$MOAT_TDIR/other-root" delete --force r2 >/dev/null 2>&1
if [ "$MOAT_MODE" = rootless ]; then
	t_match "a container of another runtime root is refused" "^1 .*(is not the network namespace of a moat-oci container under this --root|$PD)" "$rc $(cat r2.err)"
else
	t_match "a container of another runtime root is refused" '^1 .*is not the network namespace of a moat-oci container under this --root.*network.mode: pod' "$rc $(cat r2.err)"
fi

# Once the pause container is gone, its namespaces cannot be joined.
oci delete --force pause
bundle h7 '["true"]' "$(joined /proc/$PK/ns/net /proc/$PK/ns/ipc /proc/$PK/ns/uts)"
refused "a stopped container's namespaces are refused" h7 'linux.namespaces\[2\].path'
true
