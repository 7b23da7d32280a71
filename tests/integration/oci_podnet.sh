#!/bin/bash
# A Kubernetes pod's network, as containerd's CRI hands it over, without a
# cluster: the CNI plugin makes the pod's network namespace and binds it
# at /run/netns/NAME; the pause container's config.json names that path
# (linux.namespaces: network, path), the pod's other containers name it
# too or the pause container's /proc/PID/ns/net. moat joins it only with
# the policy's network.mode: pod (oci-netns.c), never the host's, and only
# a file that is a network namespace, opened without following a link.
# (With an egress policy the container is not put there: moat's gateway
# connects from it, oci_podgw.sh.)
# The test makes its own namespace (ip netns add, a test-only name) with a
# veth pair inside it, the address a CNI plugin would give.
#
# Rootless: a runtime without CAP_SYS_ADMIN in the user namespace owning
# the pod's network namespace cannot enter it: refused, with the reason;
# as root of the user's own user namespace (rootless containerd under
# rootlesskit) it joins one made there. Every refusal of a bad path holds
# rootless too.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci pod network" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }
status() { oci state "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
wait_stopped() {
	for _ in $(seq 300); do [ "$(status "$1")" = stopped ] && return 0; sleep 0.1; done
	return 1
}

# The example policy of docs/kubernetes.md.
POD="$MOAT_STAGE/examples/kubernetes/pod-network-policy.yaml"
[ -f "$POD" ] || { t_fail "the example pod policy" "no $POD"; exit 0; }

# bundle DIR ARGS_JSON NETWORK_PATH [POLICY]: a pod's container, its
# network namespace given by path as the CRI gives it.
bundle() {
	local d="$1" ann=""
	[ -n "${4:-}" ] && ann=",\"annotations\":{\"dev.moat.policy\":\"$4\"}"
	mkdir -p "$d/rootfs/bin"
	cp "$BB" "$d/rootfs/bin/busybox"
	for c in sh echo cat sleep nc readlink grep ifconfig; do ln -sf busybox "$d/rootfs/bin/$c"; done
	cat >"$d/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":$2,"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"ipc"},{"type":"uts"},
   {"type":"network","path":"$3"}]}$ann}
JSON
}

# refused NAME DIR REGEX: create fails (1), the message naming the field.
refused() {
	oci create --bundle "$2" r1 </dev/null >/dev/null 2>r.err
	local rc=$?
	oci delete --force r1 >/dev/null 2>&1
	t_match "$1" "^1 .*$3" "$rc $(cat r.err)"
}

# The mode names a network only moat-oci is handed: moat run refuses it
# rather than give the sandbox a network of another kind.
"$MOAT" run --policy "$POD" -- /bin/true >/dev/null 2>run.err
t_match "moat run refuses network.mode: pod" '^125 .*network.mode: pod joins a Kubernetes pod.s network namespace, which only moat-oci is handed' "$? $(cat run.err)"

# --- attacks on the path: each refused, whatever the policy says
NSF='linux.namespaces\[4\].path: '
bundle a1 '["true"]' /proc/1/ns/net "$POD"
# Where /proc/1 is out of the caller's reach (rootless; root of a user
# namespace below init's), the open is refused first.
refused "attack: the host's network namespace (/proc/1/ns/net)" a1 "$NSF/proc/1/ns/net( is the host.s network namespace|: Permission denied)"
bundle a2 '["true"]' /proc/$$/ns/net "$POD"
refused "attack: the runtime's caller's network namespace (the host's)" a2 "$NSF/proc/$$/ns/net is the (host.s|runtime.s own) network namespace"
echo "not a namespace" >"$MOAT_TDIR/plain"
bundle a3 '["true"]' "$MOAT_TDIR/plain" "$POD"
refused "attack: a plain file as the network namespace" a3 "$NSF$MOAT_TDIR/plain is not a namespace file\$"
bundle a4 '["true"]' /proc/$$/ns/mnt "$POD"
refused "attack: a mount namespace given as network" a4 "$NSF/proc/$$/ns/mnt is a namespace of type mnt, not net"
bundle a5 '["true"]' /proc/$$/ns/user "$POD"
refused "attack: a user namespace given as network" a5 "$NSF/proc/$$/ns/user is a namespace of type user, not net"
bundle a6 '["true"]' /proc/$$/ns/pid "$POD"
refused "attack: a pid namespace given as network" a6 "$NSF/proc/$$/ns/pid is a namespace of type pid, not net"
ln -s /proc/$$/ns/net "$MOAT_TDIR/hostlink"
bundle a7 '["true"]' "$MOAT_TDIR/hostlink" "$POD"
refused "attack: a symbolic link to the host's network namespace" a7 "$NSF$MOAT_TDIR/hostlink is not a namespace file \\(a symbolic link, which is not followed\\)"

if ! is_root; then
	# A pod network namespace the runtime has no privilege over: made in
	# a user namespace of the test's own (as a rootless CNI would).
	unshare -Urn sleep 1000 &
	SP=$!
	for _ in $(seq 50); do [ "$(readlink /proc/$SP/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.1; done
	bundle u1 '["true"]' /proc/$SP/ns/net "$POD"
	refused "rootless: a pod network namespace of another user namespace is refused, with the reason" u1 \
		"$NSF/proc/$SP/ns/net: joining a pod.s network namespace needs CAP_SYS_ADMIN in the user namespace that owns it"
	bundle u2 '["true"]' /proc/$SP/ns/net
	refused "rootless: with network.mode none it is refused, naming the ways in" u2 \
		"$NSF/proc/$SP/ns/net is not the network namespace of a moat-oci container under this --root .*network.mode: pod joins it without the gateway"
	kill $SP
	wait $SP 2>/dev/null

	# Rootless Kubernetes (rootless containerd under rootlesskit): the
	# runtime is root of a user namespace of the user's, and the pod's
	# network namespace is made in that user namespace. moat-oci joins it
	# there: a pause container listening on the pod's loopback, a second
	# container reaching it.
	cat >rl.sh <<'SH'
set -u
cd "$1"
unshare -n sh -c 'ip link set lo up; exec sleep 1000' &
SP=$!
for _ in $(seq 50); do [ "$(readlink /proc/$SP/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.1; done
sleep 0.3
sed -i "s|@NS@|/proc/$SP/ns/net|" pause/config.json app/config.json
R="$1/rl-state"
"$MOAT" oci --root "$R" create --bundle pause pause </dev/null >pause.out 2>pause.err
echo "pause=$?"
"$MOAT" oci --root "$R" start pause
echo "state=$("$MOAT" oci --root "$R" state pause | tr -d ' \n' | grep -o '"network":{[^}]*}')"
for _ in $(seq 100); do grep -q ':1F90 .* 0A ' /proc/$SP/net/tcp 2>/dev/null && break; sleep 0.1; done
"$MOAT" oci --root "$R" create --bundle app app </dev/null >app.out 2>app.err
echo "app=$?"
"$MOAT" oci --root "$R" start app
for _ in $(seq 100); do grep -q . app.out && break; sleep 0.1; done
sleep 0.5
"$MOAT" oci --root "$R" delete --force app
"$MOAT" oci --root "$R" delete --force pause
echo "podns=$(readlink /proc/$SP/ns/net)"
kill $SP
SH
	bundle pause '["sh","-c","while true; do nc -l -p 8080 -e echo from-pause; done"]' @NS@ "$POD"
	bundle app '["sh","-c","echo net=$(readlink /proc/self/ns/net); echo | nc 127.0.0.1 8080"]' @NS@ "$POD"
	MOAT="$MOAT" unshare -Ur bash rl.sh "$MOAT_TDIR" >rl.out 2>&1
	out="$(cat rl.out app.out 2>/dev/null)"
	t_match "rootless, as root of the user's own user namespace: the pause container joins a pod namespace made there" '^pause=0' "$out $(cat pause.err 2>/dev/null)"
	t_match "its state reports network: pod" '^state="network":\{"mode":"pod","path":"/proc/[0-9]+/ns/net"\}' "$out"
	t_match "a second container joins it" '^app=0' "$out $(cat app.err 2>/dev/null)"
	podns=$(sed -n 's/^podns=//p' rl.out)
	t_match "it is in the pod's network namespace" "^net=${podns//[\[\]]/.}\$" "$out"
	t_match "it reaches the pause container over the pod's loopback" '^from-pause' "$out"
	exit 0
fi

# --- root: the pod's network namespace, made as a CNI plugin makes it
NS="moat-test-$$"
ip netns add "$NS" || { t_fail "ip netns add" "cannot make a network namespace"; exit 0; }
HOSTNS="moat-test-host-$$"
cleanup() {
	oci delete --force app >/dev/null 2>&1
	oci delete --force app2 >/dev/null 2>&1
	oci delete --force atk >/dev/null 2>&1
	oci delete --force pause >/dev/null 2>&1
	ip netns delete "$NS" 2>/dev/null
	umount "/run/netns/$HOSTNS" 2>/dev/null
	rm -f "/run/netns/$HOSTNS"
}
trap cleanup EXIT
ip -n "$NS" link set lo up
if ip -n "$NS" link add pod0 type veth peer name pod1 2>/dev/null; then
	ip -n "$NS" link set pod1 up
	ip -n "$NS" link set pod0 up
	ip -n "$NS" addr add 10.213.77.2/24 dev pod0
	IF=pod0
else
	ip -n "$NS" addr add 10.213.77.2/32 dev lo
	IF=lo
fi
NSP="/run/netns/$NS"
NSINO=$(stat -L -c %i "$NSP")

# The host's network namespace (the caller's) bound under /run/netns, as a
# CNI path.
touch "/run/netns/$HOSTNS" && mount --bind /proc/$$/ns/net "/run/netns/$HOSTNS"
bundle a8 '["true"]' "/run/netns/$HOSTNS" "$POD"
refused "attack: the host's network namespace bound at a /run/netns path" a8 "$NSF/run/netns/$HOSTNS is the (host.s|runtime.s own) network namespace"
# A link put where the pod's namespace file was: not followed, even to a
# namespace the policy would allow.
ln -s "$NSP" "$MOAT_TDIR/podlink"
bundle a9 '["true"]' "$MOAT_TDIR/podlink" "$POD"
refused "attack: a symbolic link swapped in for the pod's namespace file" a9 "$NSF$MOAT_TDIR/podlink is not a namespace file \\(a symbolic link"

# Without the opt-in: refused, naming the field and how to opt in.
bundle n1 '["true"]' "$NSP"
refused "with network.mode none the pod's network namespace is refused" n1 \
	"$NSF$NSP is not the network namespace of a moat-oci container under this --root \\(a Kubernetes pod.s, made by its CNI plugin, or another.s\\); a policy with network.mode none has no use for it: an egress policy \\(network.mode proxy or transparent\\) puts moat.s gateway in front of the pod.s network, network.mode: pod joins it without the gateway \\(opt in: network: \\{mode: proxy\\} or \\{mode: pod\\}"
# network.mode: pod with no pod network: refused.
mkdir -p own/rootfs/bin && cp "$BB" own/rootfs/bin/busybox
cat >own/config.json <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},"process":{"args":["/bin/busybox","true"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"ipc"},{"type":"uts"},{"type":"network"}]},
 "annotations":{"dev.moat.policy":"$POD"}}
JSON
refused "network.mode: pod without a pod network namespace is refused" own 'network.mode: pod joins a Kubernetes pod.s network namespace'

# The pause container, in the pod's namespace: a listener on the pod's
# address.
bundle pause '["sh","-c","while true; do nc -l -p 8080 -e echo from-pause; done"]' "$NSP" "$POD"
# The sysctls containerd's CRI asks for every pod (enable_unprivileged_ports
# and _icmp, on by default since containerd 2.0): written in the pod's
# namespace by the runtime, the sandbox's user having no privilege there.
sed -i 's|"linux":{|"linux":{"sysctl":{"net.ipv4.ip_unprivileged_port_start":"0","net.ipv4.ping_group_range":"0 2147483647"},|' pause/config.json
HOST_PORT_START=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
oci create --bundle pause pause </dev/null >pause.out 2>pause.err
t_eq "the pause container joining the pod's network namespace is created" "0 " "$? $(cat pause.err)"
oci start pause
t_eq "the pause container runs" "running" "$(status pause)"
t_eq "its state reports network: pod, with the path" "pod $NSP pod" \
	"$(oci state pause | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["network"]["mode"], s["network"]["path"], s["isolation"]["egress"])')"
t_eq "the pod's network sysctls are written in the pod's namespace" "0 0	2147483647" \
	"$(ip netns exec "$NS" cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/net/ipv4/ping_group_range | tr '\n' ' ' | sed 's/ $//')"
t_eq "and not in the host's" "$HOST_PORT_START" "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
PK=$(cat "$R/pause/init.pid")
t_eq "its init is in the pod's network namespace" "net:[$NSINO]" "$(readlink /proc/$PK/ns/net)"
t_nomatch "its user namespace is its own, not the host's" "^$(readlink /proc/1/ns/user)\$" "$(readlink /proc/$PK/ns/user)"
for _ in $(seq 100); do ip netns exec "$NS" cat /proc/net/tcp 2>/dev/null | grep -q ':1F90 .* 0A ' && break; sleep 0.1; done

# A second container, given the same path (as the brief's CRI flow
# does for every container): same interface, same address, reaches the
# pause container's listener over it.
APP='["sh","-c","echo net=$(readlink /proc/self/ns/net); grep -o '"$IF"': /proc/net/dev; echo | nc 10.213.77.2 8080; ifconfig lo down 2>&1 && echo changed-lo || echo lo-unchanged"]'
bundle app "$APP" "$NSP" "$POD"
oci create --bundle app app </dev/null >app.out 2>app.err
t_eq "a second container joining the same path is created" "0 " "$? $(cat app.err)"
oci start app
wait_stopped app
out=$(cat app.out)
t_match "it is in the pod's network namespace" "^net=net:\\[$NSINO\\]" "$out"
t_match "it sees the pod's interface" "^$IF:" "$out"
t_match "it reaches the pause container over the pod's address" '^from-pause' "$out"
t_match "it cannot change the pod's interfaces (no privilege over the namespace)" '^lo-unchanged' "$out"
t_match "the pod's loopback is still up" 'UP' "$(ip -n "$NS" link show lo)"
oci delete app

# The attack program of tests/attacks, in the pod's namespace: no change
# to the pod's interfaces.
bundle atk '["/bin/attack"]' "$NSP" "$POD"
cp "$MOAT_ATTACKS/attack_pod_net_admin" atk/rootfs/bin/attack
oci create --bundle atk atk </dev/null >atk.out 2>atk.err
oci start atk
wait_stopped atk
t_match "attack: reconfiguring the pod's interfaces from a container (attack_pod_net_admin)" '^BLOCKED: [1-9][0-9]* changes' "$(cat atk.out atk.err)"
oci delete atk

# As containerd's CRI writes it for a pod's containers: the pause
# container's /proc/PID/ns/net (PID: its keeper, which state reports),
# with its ipc and uts.
KP=$(oci state pause | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
bundle app2 '["sh","-c","echo net=$(readlink /proc/self/ns/net); echo | nc 10.213.77.2 8080"]' "/proc/$KP/ns/net" "$POD"
sed -i "s|{\"type\":\"ipc\"},{\"type\":\"uts\"}|{\"type\":\"ipc\",\"path\":\"/proc/$KP/ns/ipc\"},{\"type\":\"uts\",\"path\":\"/proc/$KP/ns/uts\"}|" app2/config.json
oci create --bundle app2 app2 </dev/null >app2.out 2>app2.err
t_eq "a container joining the pause container by /proc/PID/ns paths is created" "0 " "$? $(cat app2.err)"
oci start app2
wait_stopped app2
t_match "it is in the pod's network namespace and reaches the pause container" \
	"^net=net:\\[$NSINO\\] from-pause" "$(tr '\n' ' ' <app2.out)"
oci delete app2
bundle n2 '["true"]' "/proc/$KP/ns/net"
sed -i "s|{\"type\":\"ipc\"},{\"type\":\"uts\"}|{\"type\":\"ipc\",\"path\":\"/proc/$KP/ns/ipc\"},{\"type\":\"uts\",\"path\":\"/proc/$KP/ns/uts\"}|" n2/config.json
refused "joining the pause container's pod network without network.mode: pod is refused" n2 \
	"$NSF/proc/$KP/ns/net is not the network namespace of a moat-oci container under this --root"
oci delete --force pause
true
