#!/bin/bash
# moat as an OCI runtime (oci.h, cmd_oci.c): a bundle made here from a
# static busybox, driven through the runc command line as podman and
# containerd drive it: create, start, state, exec, kill, delete, list; and
# the boundary a config.json may not widen: host namespaces, capabilities,
# a bind source or a mount point that a planted link would send to the host.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci runtime" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

R="$MOAT_TDIR/state"
oci() { "$MOAT" oci --root "$R" "$@"; }

# bundle DIR ARGS_JSON [LINUX_EXTRA] [TOP_EXTRA]: a bundle whose process
# runs ARGS_JSON.
bundle() {
	local d="$1"
	mkdir -p "$d/rootfs/bin" "$d/rootfs/etc"
	cp "$BB" "$d/rootfs/bin/busybox"
	for c in sh echo cat sleep id hostname ls grep mkdir; do ln -sf busybox "$d/rootfs/bin/$c"; done
	cat >"$d/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},"hostname":"oci-test",
 "process":{"args":$2,"env":["PATH=/bin"],"cwd":"/",
  "capabilities":{"bounding":["CAP_SYS_ADMIN","CAP_NET_ADMIN","CAP_KILL"],"effective":["CAP_SYS_ADMIN","CAP_KILL"],
   "permitted":["CAP_SYS_ADMIN","CAP_KILL"],"ambient":["CAP_SYS_ADMIN"]}},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"}],
 "linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]$3}$4}
JSON
}

# status ID: the container's status from `state`.
status() { oci state "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
# wait_stopped ID: up to 30 s.
wait_stopped() {
	for _ in $(seq 300); do [ "$(status "$1")" = stopped ] && return 0; sleep 0.1; done
	return 1
}

# --- the lifecycle
bundle b1 '["sh","-c","echo out:$(hostname); grep -E \"^Cap(Eff|Prm|Bnd|Amb)\" /proc/self/status; exit 7"]'
oci create --bundle b1 --pid-file b1.pid c1 >c1.out 2>c1.err </dev/null
t_eq "create succeeds" "0" "$?"
t_eq "the state after create is created" "created" "$(status c1)"
pid=$(cat b1.pid 2>/dev/null)
t_match "the pid file holds the keeper's pid" '^[0-9]+$' "$pid"
t_eq "state reports the pid of the pid file" "$pid" "$(oci state c1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')"
oci create --bundle b1 c1 >/dev/null 2>dup.err </dev/null
t_match "a second create with the same id is refused" 'exists already' "$(cat dup.err)"
t_check "start succeeds" oci start c1
wait_stopped c1
t_eq "the container stops when its process ends" "stopped" "$(status c1)"
t_match "the process's output reaches create's stdout" '^out:oci-test' "$(cat c1.out)"
t_eq "no capability is granted whatever the spec asks" \
	"CapPrm:	0000000000000000 CapEff:	0000000000000000 CapBnd:	0000000000000000 CapAmb:	0000000000000000" \
	"$(grep -E '^Cap(Prm|Eff|Bnd|Amb)' c1.out | tr '\n' ' ' | sed 's/ $//')"
oci start c1 2>start2.err
t_match "a stopped container cannot start again" 'not running|not created' "$(cat start2.err)"
t_check "delete removes a stopped container" oci delete c1
t_eq "its state folder is gone" "no" "$([ -e "$R/c1" ] && echo yes || echo no)"

# --- exec, kill, delete --force
bundle b2 '["sleep","1000"]'
oci create --bundle b2 c2 </dev/null >/dev/null 2>&1
oci start c2
t_eq "running after start" "running" "$(status c2)"
out=$(oci exec c2 sh -c 'echo in-exec; exit 3')
t_eq "exec runs in the container with its exit status" "in-exec 3" "$out $?"
cat >proc.json <<'JSON'
{"args":["sh","-c","echo from-process-file; exit 4"],"env":["PATH=/bin"],"cwd":"/"}
JSON
out=$(oci exec --process proc.json c2)
t_eq "exec --process FILE" "from-process-file 4" "$out $?"
oci exec --detach --pid-file ex.pid c2 sleep 1000 </dev/null >/dev/null 2>&1
t_match "exec --detach writes the waiter's pid" '^[0-9]+$' "$(cat ex.pid 2>/dev/null)"
t_match "list shows the container" 'c2 .*running' "$(oci list)"
oci delete c2 2>del.err
t_match "delete refuses a running container" 'running' "$(cat del.err)"
t_check "kill sends a signal" oci kill c2 KILL
wait_stopped c2
t_eq "killed: stopped" "stopped" "$(status c2)"
t_check "delete after kill" oci delete c2

oci create --bundle b2 c3 </dev/null >/dev/null 2>&1
oci start c3
t_check "delete --force ends a running container" oci delete --force c3
t_eq "nothing is left of it" "no" "$([ -e "$R/c3" ] && echo yes || echo no)"

# --- refusals (each names the field; nothing is left behind)
refused() { # NAME DIR REGEX
	oci create --bundle "$2" "x$$" </dev/null >/dev/null 2>ref.err
	local rc=$?
	t_match "$1" "$3" "$rc $(cat ref.err)"
	[ -e "$R/x$$" ] && t_fail "$1: nothing left" "state folder left" || true
	oci delete --force "x$$" >/dev/null 2>&1 || true
}
bundle b3 '["true"]' ',"uidMappings":[]' ''
sed -i 's/{"type":"network"}/{"type":"network","path":"\/proc\/1\/ns\/net"}/' b3/config.json
refused "the host's network namespace is refused" b3 '^1 .*linux.namespaces\[1\].path'
bundle b4 '["true"]'
sed -i 's/{"type":"pid"},//' b4/config.json
refused "a left-out pid namespace (the host's) is refused" b4 '^1 .*no "pid" entry'
bundle b5 '["true"]' ',"sysctl":{"kernel.core_pattern":"|/tmp/x"}'
refused "a host sysctl is refused" b5 '^1 .*linux.sysctl.kernel.core_pattern'
bundle b6 '["true"]' ',"devices":[{"path":"/dev/kmsg","type":"c","major":1,"minor":11}]'
refused "a device node beyond moat's /dev is refused" b6 '^1 .*linux.devices\[0\].path'
bundle b7 '["true"]' '' ',"hooks":{"prestart":[{"path":"/bin/sh"}]}'
refused "hooks (host programs) are refused" b7 '^1 .*hooks.prestart'

# run_one DIR ID: create, start, wait; the output in ID.out.
run_one() {
	oci create --bundle "$1" "$2" >"$2.out" 2>&1 </dev/null
	oci start "$2"
	wait_stopped "$2"
	oci delete "$2" >/dev/null 2>&1
}

# --- process.user: the ids of the sandbox's one mapped user
bundle b9 '["sh","-c","echo ids:$(id -u):$(id -g); cat /proc/sys/net/ipv4/ping_group_range"]' ',"sysctl":{"net.ipv4.ping_group_range":"0 2147483647"}'
sed -i 's/"process":{/"process":{"user":{"uid":1234,"gid":4321,"additionalGids":[4321]},/' b9/config.json
run_one b9 c9
t_eq "process.user: the process runs with the spec's uid and gid" "ids:1234:4321" "$(head -1 c9.out)"
t_eq "ping_group_range narrowed to the one mapped group" "4321	4321" "$(tail -1 c9.out)"
bundle b10 '["sh","-c","echo ids:$(id -u):$(id -g); grep -E \"^CapEff\" /proc/self/status"]'
run_one b10 c10
t_eq "process.user 0 (the default): id 0 inside, still no capability" "ids:0:0 CapEff:	0000000000000000" \
	"$(tr '\n' ' ' <c10.out | sed 's/ $//')"
bundle b11 '["sh","-c","true"]'
sed -i 's/"process":{/"process":{"user":{"uid":0,"gid":0,"additionalGids":[0,5]},/' b11/config.json
refused "a supplementary group the sandbox cannot map is refused" b11 '^1 .*process.user.additionalGids\[1\]'
bundle b12 '["sleep","1000"]'
oci create --bundle b12 c12 </dev/null >/dev/null 2>&1
oci start c12
cat >user.json <<'JSON'
{"args":["id","-u"],"env":["PATH=/bin"],"cwd":"/","user":{"uid":5,"gid":5}}
JSON
oci exec --process user.json c12 >/dev/null 2>uexec.err
t_match "exec as another user than the container's is refused" '^1 .*process.user' "$? $(cat uexec.err)"
t_eq "exec without a user runs as the container's" "0" "$(oci exec c12 id -u)"
oci delete --force c12

# --- linux.seccomp: the spec's filter on top of moat's
SC='"seccomp":{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_AARCH64"],"syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1},{"names":["no_such_call"],"action":"SCMP_ACT_ERRNO"},{"names":["rmdir"],"action":"SCMP_ACT_KILL_PROCESS"}]}'
bundle b13 '["sh","-c","mkdir /tmp/d 2>&1; echo mkdir=$?; busybox rmdir /tmp; echo rmdir=$?"]' ",$SC"
run_one b13 c13
t_match "linux.seccomp: mkdir denied with EPERM" "Operation not permitted.* mkdir=1" "$(tr '\n' ' ' <c13.out)"
t_match "linux.seccomp: SCMP_ACT_KILL_PROCESS kills with SIGSYS" "rmdir=159" "$(cat c13.out)"
bundle b14 '["sh","-c","mkdir /tmp/d && echo made"]'
run_one b14 c14
t_eq "without the spec's filter mkdir works (the check above can fail)" "made" "$(cat c14.out)"
bundle b15 '["sleep","1000"]' ",$SC"
oci create --bundle b15 c15 </dev/null >/dev/null 2>&1
oci start c15
t_match "linux.seccomp applies to exec'd processes too" "Operation not permitted" "$(oci exec c15 mkdir /tmp/e 2>&1)"
oci delete --force c15
bundle b16 '["true"]' ',"seccomp":{"defaultAction":"SCMP_ACT_NOTIFY"}'
refused "linux.seccomp: SCMP_ACT_NOTIFY is refused" b16 '^1 .*linux.seccomp.defaultAction'

# --- maskedPaths, readonlyPaths, tmpfs mounts, namespaced sysctls
bundle b17 '["sh","-c","echo secret=$(cat /etc/secret 2>&1); echo dir=$(ls /srv/dir); echo ok >/run/w && echo run-writable; echo x >/srv/ro/x 2>/dev/null || echo ro-refused; busybox stat -c run-mode=%a /run; busybox df -k /run | busybox awk \"NR==2{print \\\"run-kb=\\\" \\$2}\"; echo fwd=$(cat /proc/sys/net/ipv4/ip_forward) shm=$(cat /proc/sys/kernel/shmmni)"]' \
	',"maskedPaths":["/etc/secret","/srv/dir","/no/such/path"],"readonlyPaths":["/srv/ro","/no/such"],"sysctl":{"net.ipv4.ip_forward":"1","kernel.shmmni":"1234"}'
echo hidden >b17/rootfs/etc/secret
mkdir -p b17/rootfs/srv/dir && echo x >b17/rootfs/srv/dir/f
sed -i 's|"mounts":\[|"mounts":[{"destination":"/run","type":"tmpfs","source":"tmpfs","options":["nosuid","strictatime","mode=755","size=8m"]},{"destination":"/srv/ro","type":"tmpfs","source":"tmpfs","options":["size=100g"]},|' b17/config.json
host_fwd=$(cat /proc/sys/net/ipv4/ip_forward) host_shm=$(cat /proc/sys/kernel/shmmni)
run_one b17 c17
out=$(tr '\n' ' ' <c17.out)
t_match "linux.maskedPaths: a file reads empty" "secret= " "$out"
t_match "linux.maskedPaths: a folder is empty" "dir= " "$out"
t_match "linux.readonlyPaths: read-only" "ro-refused" "$out"
t_match "a spec tmpfs at /run is mounted, writable, with its mode" "run-writable .*run-mode=755" "$out"
t_match "its size as asked" "run-kb=8192 " "$out"
t_match "linux.sysctl: written in the container's namespaces" "fwd=1 shm=1234" "$out"
t_eq "the host's sysctls are unchanged" "$host_fwd $host_shm" \
	"$(cat /proc/sys/net/ipv4/ip_forward) $(cat /proc/sys/kernel/shmmni)"
bundle b18 '["busybox","df","-k","/big"]'
sed -i 's|"mounts":\[|"mounts":[{"destination":"/big","type":"tmpfs","source":"tmpfs","options":["size=100g"]},|' b18/config.json
run_one b18 c18
kb=$(awk 'NR==2{print $2}' c18.out)
t_match "a spec tmpfs's size is capped (at most 256 MiB)" '^yes$' "$([ "${kb:-0}" -gt 0 ] && [ "${kb:-0}" -le 262144 ] && echo yes || cat c18.out)"
bundle b19 '["true"]'
sed -i 's|"mounts":\[|"mounts":[{"destination":"/run","type":"tmpfs","source":"tmpfs","options":["suid"]},|' b19/config.json
refused "a tmpfs option that would widen moat's mounts is refused" b19 '^1 .*mounts\[0\].options\[0\]: suid'

# --- process.oomScoreAdj: the container's processes have it (raised here,
# which needs no privilege).
bundle b21 '["sh","-c","cat /proc/self/oom_score_adj"]'
sed -i 's|"cwd":"/"|"cwd":"/","oomScoreAdj":567|' b21/config.json
oci create --bundle b21 c21 >c21.out 2>&1 </dev/null
oci start c21
wait_stopped c21
t_eq "process.oomScoreAdj is the process's" "567" "$(cat c21.out)"
oci delete c21

# --- a process that cannot start: the caller gets a non-zero exit and the
# reason, on stderr and in the --log file (JSON with --log-format json),
# worded as runc words it (podman reads 127 or 126 from it). As root of the
# host it is create that fails, as runc's does; rootless, the keeper may not
# look into the sandbox's root and start fails instead. Either way the
# container ends stopped, with the exec's status.
# startfail NAME ARGS_JSON CWD PATTERN
startfail() {
	bundle "b-$1" "$2"
	sed -i "s|\"cwd\":\"/\"|\"cwd\":\"$3\"|" "b-$1/config.json"
	printf '#!/bin/sh\necho x\n' >"b-$1/rootfs/bin/noexec"
	chmod 644 "b-$1/rootfs/bin/noexec"
	rm -f "$1.log"
	local rc
	if oci --log "$1.log" --log-format json create --bundle "b-$1" "c-$1" </dev/null >/dev/null 2>"$1.err"; then
		oci --log "$1.log" --log-format json start "c-$1" 2>"$1.err"
		rc=$?
		wait_stopped "c-$1"
		t_eq "$1: the container is stopped" "stopped" "$(status "c-$1")"
	else
		rc=1
		t_eq "$1: a create that failed leaves no container" "no" "$([ -e "$R/c-$1" ] && echo yes || echo no)"
	fi
	t_eq "$1: create or start fails" "1" "$rc"
	t_match "$1: the reason on stderr" "$4" "$(cat "$1.err")"
	t_match "$1: the reason in the JSON log" "^\{\"level\":\"error\",\"msg\":\".*$4" "$(tail -1 "$1.log" 2>/dev/null)"
	oci delete --force "c-$1" 2>/dev/null
}
startfail missing '["/nonexistent"]' / 'exec: \\?"/nonexistent\\?": stat /nonexistent: [Nn]o such file or directory'
startfail notonpath '["nothere"]' / 'exec: \\?"nothere\\?": executable file not found in \$PATH'
startfail notexec '["/bin/noexec"]' / '/bin/noexec.*: Permission denied'
startfail badcwd '["true"]' /nodir '/nodir.*No such file or directory'
oci delete --force never-made
t_eq "delete --force of a container that is not there succeeds, as runc's" "0" "$?"

# --- annotations: the example pod's egress policy (examples/kubernetes)
# puts the container behind moat's gateway, and the audit log goes where
# dev.moat.audit says.
POL="$MOAT_STAGE/examples/kubernetes/egress-policy.yaml"
t_check "the example egress policy is valid" "$MOAT" policy check "$POL"
bundle b8 '["sh","-c","echo proxy=$HTTPS_PROXY"]' '' ",\"annotations\":{\"dev.moat.policy\":\"$POL\",\"dev.moat.audit\":\"$MOAT_TDIR/audit.jsonl\"}"
oci create --bundle b8 c8 >c8.out 2>&1 </dev/null
oci start c8
wait_stopped c8
t_eq "dev.moat.policy: egress through the gateway" "proxy=http://127.0.0.1:3128" "$(cat c8.out)"
t_match "dev.moat.audit: the container's audit log" '"type":"session.start"' "$(cat audit.jsonl 2>/dev/null)"
t_check "the audit log verifies" "$MOAT" audit verify audit.jsonl
oci delete c8
true
