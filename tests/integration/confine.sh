#!/bin/bash
# Confinement as a user sees it: what the result reports, the exec
# allowlist of a policy, compile-and-run in /tmp, and the two seccomp profiles.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR" || exit 1

mrun run --result r.json -- /bin/true
t_eq "a run succeeds" 0 "$RC"
t_eq "capabilities dropped" True "$(json r.json 'j["isolation"]["caps_dropped"]')"
t_eq "no_new_privs" True "$(json r.json 'j["isolation"]["no_new_privs"]')"
t_eq "seccomp profile code by default" code "$(json r.json 'j["isolation"]["seccomp"]["profile"]')"
t_eq "seccomp rule count reported" True "$(json r.json 'j["isolation"]["seccomp"]["rules"] > 100')"
abi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(max(0, l.syscall(444, None, 0, 1)))')
t_eq "the Landlock ABI reported is the kernel's" "$abi" "$(json r.json 'j["isolation"]["landlock_abi"]')"

# The same view from inside: empty capability sets, seccomp filter mode.
mrun run -- /bin/sh -c 'grep -E "^(CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
t_eq "the kernel agrees inside" "$(printf 'CapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2')" "$OUT"

# Signals the caller ignores are not ignored by the command: the init
# resets every disposition it inherited that is not the default.
(trap '' INT QUIT TERM USR1 PIPE; mrun run -- /bin/sh -c 'cat /proc/self/status | grep -E "^Sig(Ign|Cgt|Blk):" | tr -s "\t" " "'
	printf '%s' "$OUT" >sig.out)
t_eq "signals the caller ignored: default in the command" "$(printf 'SigBlk: 0000000000000000\nSigIgn: 0000000000000000\nSigCgt: 0000000000000000')" "$(cat sig.out)"
# glibc's posix_spawn (make starts its recipes with it) hands its child
# glibc's two internal signals, 32 and 33, ignored; glibc's sigaction()
# refuses to touch them, so the init resets them by the raw system call.
python3 -c '
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))' "$MOAT" run -- /bin/sh -c 'cat /proc/self/status | grep -E "^Sig(Ign|Cgt|Blk):" | tr -s "\t" " "' >sig2.out 2>&1
t_eq "signals 32 and 33 a posix_spawn caller ignored: default in the command" "$(printf 'SigBlk: 0000000000000000\nSigIgn: 0000000000000000\nSigCgt: 0000000000000000')" "$(cat sig2.out)"

if [ "$abi" -gt 0 ]; then
	# Compile-and-run: a program written to /tmp may run...
	mrun run -- /bin/sh -c 'cp /bin/true /tmp/prog && /tmp/prog && echo ran'
	t_eq "a program built in /tmp runs" ran "$OUT"
	# ...but nothing written to /out may.
	mkdir -p out
	mrun run --out "$MOAT_TDIR/out" -- /bin/sh -c 'cp /bin/true /out/prog; /out/prog; echo $?'
	t_eq "a program written to /out does not run" 126 "$OUT"
	# The agent profile's workspace is where it builds and runs things.
	mkdir -p rw && chmod 777 rw
	mrun run --profile agent --net none --out "$MOAT_TDIR/out" --rw "$MOAT_TDIR/rw:/w" -- /bin/sh -c 'cp /bin/true /out/prog2 && /out/prog2 && cp /bin/true /w/p && /w/p && echo ran'
	t_eq "agent profile (exec.workspace): programs written to /out and --rw run" ran "$OUT"

	# exec.allow in a policy: only the listed programs (and the loader) run.
	cat >exec.yaml <<'YAML'
version: 1
name: exec-test
exec:
  allow: [/bin/sh, /usr/bin/python3]
YAML
	mrun run --policy exec.yaml --result e.json -- /bin/sh -c 'python3 -c "print(6*7)"; /usr/bin/id; echo "id: $?"; python3 -c "import shutil; shutil.copy(\"/bin/sh\", \"/tmp/sh2\")"; /tmp/sh2 -c true; echo "tmp: $?"'
	t_eq "allowed programs run, others do not, /tmp neither" "$(printf '42\nid: 126\ntmp: 126')" "$OUT"
	t_eq "the result says an allowlist is in force" "fs(exec-allowlist),scope" \
		"$(json e.json 'j["isolation"]["landlock_rules"]')"
else
	t_skip "Landlock exec rules" "no Landlock on this kernel"
fi

# Netlink: closed in the code profile; NETLINK_ROUTE only in the agent's.
NL='import socket
for p in (0, 9):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, p); print(p, "open")
    except OSError as e:
        print(p, e.errno)'
mrun run -- python3 -c "$NL"
t_eq "code profile: no netlink at all" "$(printf '0 97\n9 97')" "$OUT"
mrun run --profile agent --result a.json -- python3 -c "$NL"
t_eq "agent profile: NETLINK_ROUTE only" "$(printf '0 open\n9 93')" "$OUT"
t_eq "agent seccomp profile reported" agent "$(json a.json 'j["isolation"]["seccomp"]["profile"]')"

# require: refuses before anything starts when the host cannot give a layer,
# and agrees with moat doctor about which layers that is.
printf 'version: 1\nname: req\nrequire: [seccomp, landlock]\n' >req1.yaml
mrun run --policy req1.yaml -- /bin/echo ran
if [ "$abi" -gt 0 ]; then t_eq "require: [seccomp, landlock] runs here" ran "$OUT"; fi
printf 'version: 1\nname: req\nrequire: [cgroup]\n' >req2.yaml
mrun doctor
cg_ok=no
printf '%s\n' "$OUT" | grep -Eq '^  ok +cgroup limits' && cg_ok=yes
mrun run --policy req2.yaml -- /bin/echo ran
if [ "$cg_ok" = yes ]; then
	t_eq "require: [cgroup] runs where the doctor finds cgroups" ran "$OUT"
else
	t_eq "require: [cgroup] is refused where the doctor finds none" 125 "$RC"
	t_match "and the message names the layer and the fix" "requires cgroup.*fix:" "$ERR"
fi
