#!/bin/bash
# podman with --runtime pointing at moat-oci, as root and rootless, on an
# image imported here from a root filesystem tarball (no registry): run
# --rm, -it with a terminal, exec, stop, kill, ps, --memory ending in an
# OOM kill, --network none; and podman's default network (a namespace it
# made, joined by path) refused with the reason.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if ! command -v podman >/dev/null; then
	t_skip "podman on moat-oci" "podman is not installed (Debian: podman)"
	exit 0
fi
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "podman on moat-oci" "needs a static busybox (Debian: busybox-static) for the image"
	exit 0
fi
if ! command -v script >/dev/null; then
	t_skip "podman on moat-oci" "needs script(1) (util-linux) for a terminal"
	exit 0
fi

mkdir -p bin home run img/bin img/etc img/proc img/dev img/sys img/tmp
chmod 700 run
ln -sf "$MOAT" bin/moat-oci
cp "$BB" img/bin/busybox
for c in sh echo cat sleep id hostname tty yes head; do ln -sf busybox "img/bin/$c"; done
echo 'root:x:0:0::/:/bin/sh' >img/etc/passwd
# Owned by root in the tarball: a rootless podman without subordinate ids
# maps only that one.
tar --owner=0 --group=0 --numeric-owner -C img -cf img.tar .
export HOME="$MOAT_TDIR/home" XDG_RUNTIME_DIR="$MOAT_TDIR/run"
# Storage of this test's own, so that nothing of the host's podman is used
# or changed.
P=(podman --root "$MOAT_TDIR/storage" --runroot "$MOAT_TDIR/runroot" --storage-driver vfs
	--cgroup-manager cgroupfs --runtime "$MOAT_TDIR/bin/moat-oci")
"${P[@]}" import img.tar localhost/moat-bb:1 >/dev/null 2>import.err
rc=$?
if [ "$rc" = 0 ]; then t_ok "podman import of a local rootfs tarball"; else
	t_fail "podman import of a local rootfs tarball" "exit $rc" "$(tail -3 import.err)"; fi

out=$("${P[@]}" run --rm --network none localhost/moat-bb:1 sh -c 'echo hi; id -u; exit 6' 2>run.err)
rc=$?
t_eq "run --rm: output and exit status" "hi 0 6" "$(echo $out) $rc"
# A process that cannot start: podman reads the runtime's reason (worded
# as runc's) and exits 127 (not found) or 126 (not executable), as with runc.
"${P[@]}" run --rm --network none localhost/moat-bb:1 /nonexistent >nx.out 2>&1
t_eq "run of a missing program: exit 127" "127" "$?"
t_match "run of a missing program: the reason" 'exec: .?"/nonexistent.?": stat /nonexistent: [Nn]o such file' "$(cat nx.out)"
"${P[@]}" run --rm --network none localhost/moat-bb:1 /etc/passwd >nx.out 2>&1
t_eq "run of a file that is not executable: exit 126" "126" "$?"
t_match "run of a file that is not executable: the reason" '/etc/passwd.*Permission denied' "$(cat nx.out)"
out=$("${P[@]}" run --rm --network none --user 1234:4321 localhost/moat-bb:1 sh -c 'id -u; id -g' 2>&1)
t_eq "run --user: the process has the ids asked for" "1234 4321" "$(echo $out)"

out=$(printf 'echo tty-$((6*7)); tty; exit 3\n' |
	timeout 120 script -qec "${P[*]} run -it --rm --network none localhost/moat-bb:1 sh" /dev/null 2>&1)
rc=$?
t_match "run -it: a terminal of the container's own" 'tty-42.*/dev/pts/[0-9]' "$(echo $out)"
t_eq "run -it: the shell's exit status" "3" "$rc"

"${P[@]}" run -d --name c1 --network none localhost/moat-bb:1 sleep 1000 >/dev/null 2>d.err
t_eq "run -d" "0" "$?"
t_match "ps shows it up" 'c1 Up' "$("${P[@]}" ps --format '{{.Names}} {{.Status}}')"
out=$("${P[@]}" exec c1 sh -c 'echo in-exec; exit 5')
t_eq "exec: output and exit status" "in-exec 5" "$out $?"
timeout 120 "${P[@]}" stop -t 2 c1 >/dev/null 2>&1
t_match "stop: exited by SIGTERM" 'Exited \(143\)' "$("${P[@]}" ps -a --format '{{.Names}} {{.Status}}' | grep c1)"
"${P[@]}" rm c1 >/dev/null 2>&1

"${P[@]}" run -d --name c2 --network none localhost/moat-bb:1 sleep 1000 >/dev/null 2>&1
"${P[@]}" kill c2 >/dev/null 2>&1
t_eq "kill" "0" "$?"
for _ in $(seq 100); do "${P[@]}" ps -a --format '{{.Names}} {{.Status}}' | grep -q 'c2 Exited' && break; sleep 0.1; done
t_match "kill: exited by SIGKILL" 'Exited \(137\)' "$("${P[@]}" ps -a --format '{{.Names}} {{.Status}}' | grep c2)"
"${P[@]}" rm -f c2 >/dev/null 2>&1

"${P[@]}" run --rm --network none --memory 64m localhost/moat-bb:1 sh -c 'x=$(yes | head -c 200000000); echo survived' >oom.out 2>&1
rc=$?
if grep -q 'Resource limits are not supported' oom.out; then
	# podman passes no limit then; moat's own (the code profile's 256M)
	# still holds, below which the shell's allocation fails.
	t_na "--memory 64m: 200 MB ends in an OOM kill" "podman ignores --memory when rootless on cgroup v1"
else
	t_eq "--memory 64m: 200 MB ends in an OOM kill" "137" "$rc"
fi
t_nomatch "--memory 64m: the process did not survive" 'survived' "$(cat oom.out)"

"${P[@]}" run --rm localhost/moat-bb:1 true >net.out 2>&1
rc=$?
if grep -q 'slirp4netns' net.out; then
	t_na "podman's own network namespace is refused, with the reason" "rootless podman needs slirp4netns for it"
else t_match "podman's own network namespace is refused, with the reason" \
	'linux.namespaces\[[0-9]\].path: /run/netns/[^ ]* is not the network namespace of a moat-oci container under this --root.*network.mode: pod' "$(cat net.out)"
fi
t_match "podman's own network namespace: podman fails" '^[1-9]' "$rc"
# With the policy's opt-in (network.mode: pod, the example pod policy of
# docs/kubernetes.md), podman's own network namespace, made by its network
# backend as a CNI plugin makes a pod's, is joined: the container sees
# podman's interface beside loopback.
PODPOL="$MOAT_STAGE/examples/kubernetes/pod-network-policy.yaml"
"${P[@]}" run --rm --annotation "dev.moat.policy=$PODPOL" localhost/moat-bb:1 cat /proc/net/dev >podnet.out 2>&1
rc=$?
if grep -q 'slirp4netns' podnet.out; then
	t_na "network.mode: pod: podman's own network namespace is joined" "rootless podman needs slirp4netns for it"
else
	t_eq "network.mode: pod: podman's own network namespace is joined" "0" "$rc"
	t_match "network.mode: pod: the container sees loopback" '^ *lo:' "$(cat podnet.out)"
	t_match "network.mode: pod: and podman's interface" '^ *[a-z][a-z0-9]*:' "$(grep -v '^ *lo:' podnet.out)"
fi

# A pod: podman's infra container makes the namespaces, the pod's other
# containers join them by /proc/PID/ns paths (PID: the infra container's
# pid from `state`, its keeper's, which moat maps to its sandbox's).
printf '#!/bin/sh\nexec sleep 100000\n' >img/bin/pause
chmod 755 img/bin/pause
tar --owner=0 --group=0 --numeric-owner -C img -cf img2.tar .
"${P[@]}" import img2.tar localhost/moat-bb:2 >/dev/null 2>&1
"${P[@]}" pod create --name pod1 --network none --infra-image localhost/moat-bb:2 --infra-command /bin/pause >/dev/null 2>pod.err
"${P[@]}" pod start pod1 >/dev/null 2>>pod.err
t_eq "pod: the infra container runs" "Up" "$("${P[@]}" ps --pod --filter name=infra --format '{{.Status}}' 2>&1 | cut -d' ' -f1)"
infra=$("${P[@]}" ps --pod -q --filter name=infra | head -1)
want=$("${P[@]}" exec "$infra" sh -c 'for n in net uts ipc; do readlink /proc/self/ns/$n; done; hostname' 2>&1 | tr '\n' ' ')
got=$("${P[@]}" run --rm --pod pod1 localhost/moat-bb:2 sh -c 'for n in net uts ipc; do readlink /proc/self/ns/$n; done; hostname' 2>&1 | tr '\n' ' ')
t_match "pod: the infra container's namespaces and hostname" '^net:\[[0-9]+\] uts:\[[0-9]+\] ipc:\[[0-9]+\] pod1 $' "$want"
t_eq "pod: a container of the pod shares them" "$want" "$got"
"${P[@]}" pod rm -f pod1 >/dev/null 2>&1
"${P[@]}" rm -af >/dev/null 2>&1
"${P[@]}" rmi -af >/dev/null 2>&1
true
