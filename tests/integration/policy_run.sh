#!/bin/bash
# Each policy field changes what the sandbox can do: moat run --policy FILE,
# with the file's relative paths starting at its own folder, and flags on top.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
mkdir -p proj/input proj/output
echo "policy-visible" >proj/input/data.txt
echo "from stdin" >proj/stdin.txt
# As root moat runs the command as an unprivileged host uid, which must be
# able to write the read-write folder.
chmod 777 proj/output

pol() { printf 'version: 1\n%s\n' "$1" >proj/p.yaml; }

# filesystem.read_only: the folder is visible, read-only, at the given path.
mrun run -- /bin/cat /data/data.txt
t_eq "without the policy /data is absent" 1 "$RC"
pol 'filesystem: {read_only: ["./input:/data"]}'
mrun run --policy proj/p.yaml -- /bin/cat /data/data.txt
t_eq "read_only makes the folder visible" "policy-visible" "$OUT"
mrun run --policy proj/p.yaml -- /bin/sh -c 'echo x > /data/new'
t_match "read_only is not writable" '^[12]$' "$RC"
t_eq "nothing was written" "" "$(ls proj/input | grep -v data.txt)"

# filesystem.read_write: writes reach the host folder.
pol 'filesystem: {read_write: ["./output:/work"]}'
mrun run --policy proj/p.yaml -- /bin/sh -c 'echo written > /work/w.txt'
t_eq "read_write: write succeeds" 0 "$RC"
t_eq "read_write: the host sees it" "written" "$(cat proj/output/w.txt 2>/dev/null)"

# filesystem.out and cwd.
rm -f proj/output/*
pol 'filesystem: {out: ./output, cwd: /out}'
mrun run --policy proj/p.yaml -- /bin/sh -c 'pwd; echo o > o.txt'
t_eq "cwd is set" "/out" "$OUT"
t_eq "out receives files" "o" "$(cat proj/output/o.txt 2>/dev/null)"

# env: a map sets variables; the list form passes the caller's value.
export MOAT_POLICY_PASS=passed-through
pol 'env: {GREETING: hello}'
mrun run --policy proj/p.yaml -- /bin/sh -c 'echo $GREETING'
t_eq "env map sets a variable" "hello" "$OUT"
pol 'env: [MOAT_POLICY_PASS, "B=2"]'
mrun run --policy proj/p.yaml -- /bin/sh -c 'echo $MOAT_POLICY_PASS $B'
t_eq "env list passes and sets" "passed-through 2" "$OUT"
mrun run -- /bin/sh -c 'echo "[$MOAT_POLICY_PASS]"'
t_eq "without the policy nothing is passed" "[]" "$OUT"

# limits.wall kills; a flag overrides the single field.
pol 'limits: {wall: 1s}'
mrun run --policy proj/p.yaml --result r.json -- /bin/sleep 5
t_eq "limits.wall: status timeout" timeout "$(json r.json 'j["status"]' 2>/dev/null)"
t_eq "limits.wall: killed" 137 "$RC"
mrun run --policy proj/p.yaml --time 10s -- /bin/sh -c 'sleep 2; echo done'
t_eq "--time overrides limits.wall" "done" "$OUT"

# limits.output caps the output.
pol 'limits: {output: 100}'
mrun run --policy proj/p.yaml --result r.json -- /bin/sh -c 'head -c 10000 /dev/zero | tr "\\0" x'
t_eq "limits.output: status" output_limit "$(json r.json 'j["status"]' 2>/dev/null)"
t_eq "limits.output: at most 100 bytes out" 100 "${#OUT}"

# stdin and hostname.
pol 'stdin: ./stdin.txt
hostname: policybox'
mrun run --policy proj/p.yaml -- /bin/sh -c 'cat; cat /proc/sys/kernel/hostname'
t_eq "stdin and hostname" "from stdin
policybox" "$OUT"

# result: the policy names where the JSON result goes.
pol 'result: ./result.json'
mrun run --policy proj/p.yaml -- /bin/true
t_eq "result path from the policy" exited "$(json proj/result.json 'j["status"]' 2>/dev/null)"

# A bad policy stops the run before anything starts.
pol 'filesystem: {read_onyl: [./input]}'
mrun run --policy proj/p.yaml -- /bin/echo must-not-run
t_eq "bad policy: 125" 125 "$RC"
t_eq "bad policy: command did not run" "" "$OUT"
t_match "bad policy: FILE:LINE:COL" "p.yaml:2:14: unknown key 'filesystem.read_onyl'" "$ERR"

# Profiles work from any folder; the code profile is the default.
cd /
mrun run --profile code -- /bin/echo code-profile
t_eq "--profile code from /" "code-profile" "$OUT"
mrun run --profile agent --result "$MOAT_TDIR/a.json" -- /bin/true
t_eq "--profile agent runs" 0 "$RC"
