#!/bin/bash
# moat run: exit codes, output, the JSON result, the environment.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

mrun run -- /bin/echo hello
t_eq "echo prints" "hello" "$OUT"
t_eq "echo exits 0" 0 "$RC"

mrun run -- /bin/sh -c 'exit 3'
t_eq "command's exit status is moat's" 3 "$RC"

mrun run -- /bin/sh -c 'kill -TERM $$'
t_eq "signal N gives 128+N" 143 "$RC"

mrun run -- no-such-command-moat
t_eq "command not found gives 127" 127 "$RC"
t_match "not found is said" "no-such-command-moat: command not found" "$ERR"

mrun run -- /etc/hostname
t_eq "not executable gives 126" 126 "$RC"

mrun run --result "$MOAT_TDIR/r.json" -- /bin/sh -c 'echo out; echo err >&2; exit 5'
t_eq "result: status" exited "$(json r.json 'j["status"]')"
t_eq "result: exit_code" 5 "$(json r.json 'j["exit_code"]')"
t_eq "result: stdout_bytes" 4 "$(json r.json 'j["stdout_bytes"]')"
t_eq "result: stderr_bytes" 4 "$(json r.json 'j["stderr_bytes"]')"
t_eq "result: every namespace" True "$(json r.json 'all(j["isolation"][k] for k in ("userns","mountns","pidns","netns","ipcns","utsns","cgroupns"))')"
t_eq "result: no egress without a network mode" none "$(json r.json 'j["isolation"]["egress"]')"
t_eq "result: mode" "$MOAT_MODE" "$(json r.json 'j["isolation"]["mode"]')"
t_eq "result: rootfs read-only" True "$(json r.json 'j["isolation"]["rootfs_readonly"]')"
t_match "result: wall_ms is a number" '^[0-9]+$' "$(json r.json 'j["wall_ms"]')"

mrun run --result - -- /bin/true
t_match "result to stdout is JSON" '^\{"status":"exited"' "$OUT"

# The environment starts empty apart from PATH, HOME, LANG, TERM and
# ASAN_OPTIONS (no leak reports: LeakSanitizer needs ptrace).
export MOAT_TEST_SECRET=hunter2-caller-secret
mrun run -- /usr/bin/env
t_eq "environment is minimal (and names the policy it runs under)" "ASAN_OPTIONS HOME LANG MOAT_PARENT_POLICY PATH TERM" "$(printf '%s\n' "$OUT" | cut -d= -f1 | sort | tr '\n' ' ' | sed 's/ $//')"
mrun run --env MOAT_TEST_SECRET -- /bin/sh -c 'echo $MOAT_TEST_SECRET'
t_eq "--env NAME passes the caller's value" "hunter2-caller-secret" "$OUT"
mrun run --env FOO=bar=baz -- /bin/sh -c 'echo $FOO'
t_eq "--env NAME=VALUE sets it" "bar=baz" "$OUT"
mrun run -- /bin/sh -c 'cat /proc/1/environ /proc/1/cmdline /proc/self/environ 2>/dev/null | tr "\0" "\n"; env'
t_nomatch "caller's environment is nowhere inside" "hunter2" "$OUT"
t_nomatch "caller's command line is not pid 1's" "MOAT_TEST|/bin/sh -c" "$(printf '%s' "$OUT" | head -c 200)"

mrun run --cwd /usr/share -- /bin/pwd
t_eq "--cwd sets the working directory" /usr/share "$OUT"
echo "from a file" > in.txt
mrun run --stdin "$MOAT_TDIR/in.txt" -- /bin/cat
t_eq "--stdin FILE feeds the command" "from a file" "$OUT"
OUT=$(echo piped | "$MOAT" run -- /bin/cat 2>&1)
t_eq "a pipe on stdin reaches the command" piped "$OUT"

mrun run -- /bin/sh -c 'id -u; id -g; id -G; hostname'
t_eq "one sandbox user, no groups, own hostname" "1000 1000 1000 moat" "$(echo $OUT)"

mrun run -- /bin/sh -c 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status | awk "{print \$2}" | sort -u'
t_eq "no capabilities in the command (inheritable, permitted, effective, ambient)" "0000000000000000" "$(printf '%s\n' "$OUT" | head -1)"

mrun --version
t_match "--version" '^moat [0-9]' "$OUT"
mrun run --help
t_match "run --help has an example" 'example' "$OUT"

# The terminal: never the caller's; -t gives one of the sandbox's own.
mrun run -t -- /bin/sh -c 'tty; test -t 0 && echo stdin-is-a-tty; ls /dev/pts | tr "\n" " "'
t_eq "-t gives a private pseudo-terminal" "/dev/pts/0 stdin-is-a-tty 0 ptmx" "$(echo $OUT | tr -d '\r')"
if command -v script >/dev/null; then
	OUT=$(script -qec "$MOAT run -- /bin/sh -c 'readlink /proc/self/fd/0; test -t 1 || echo stdout-not-a-tty'" /dev/null </dev/null 2>&1 | tr -d '\r')
	t_eq "without -t, the caller's terminal does not cross" "/dev/null stdout-not-a-tty" "$(echo $OUT)"
fi
