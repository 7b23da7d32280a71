#!/bin/bash
# Secrets never enter the sandbox: it sees placeholders (random, recognisable,
# as long as the value), and a scan of every process in the sandbox (its
# environment, command line and readable memory) finds no value. As root the
# sandbox's processes are also scanned from the host, the init included, whose
# memory the command cannot read: the values are kept out of what the init
# inherits from the supervisor (secretstore.h). A control value placed in a
# sandbox process on purpose is found by the same scans, so they can fail.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
SCAN="$MOAT_SRC/integration/secret_scan.py"

rand() { python3 -c 'import secrets,string,sys; print(sys.argv[1] + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(int(sys.argv[2]))))' "$1" "$2"; }
mask() { python3 -c 'import sys; print(bytes(b ^ 0x5a for b in sys.argv[1].encode()).hex())' "$1"; }

ENV_VALUE=$(rand ghp_ 36)
FILE_VALUE=$(rand sk-test- 90)
CONTROL=$(rand ctl_ 40)
printf '%s\n' "$FILE_VALUE" >model.key
chmod 600 model.key
mkdir -p out
is_root && chown 65534:65534 out
cat >policy.yaml <<EOF
version: 1
network:
  allow: [api.github.com, api.example.com]
secrets:
  - name: github
    from: env:HOST_GH_TOKEN
    env: GITHUB_TOKEN
    inject: {host: api.github.com, header: Authorization, format: "Bearer {value}"}
  - name: model
    from: file:$MOAT_TDIR/model.key
    env: MODEL_API_KEY
    inject: {host: api.example.com}
EOF

# Placeholders: per secret, the documented shape, as long as the value (or
# the shape's minimum), and never the value.
OUT=$(HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml -- /bin/sh -c 'echo "$GITHUB_TOKEN"; echo "$MODEL_API_KEY"' 2>&1) && RC=0 || RC=$?
t_eq "run with secrets: exit 0" 0 "$RC"
PH_GH=$(printf '%s\n' "$OUT" | sed -n 1p)
PH_MODEL=$(printf '%s\n' "$OUT" | sed -n 2p)
t_match "placeholder for github: moat_ph_github_ and hex" '^moat_ph_github_[0-9a-f]{32,}$' "$PH_GH"
t_match "placeholder for model: moat_ph_model_ and hex" '^moat_ph_model_[0-9a-f]{32,}$' "$PH_MODEL"
t_eq "placeholder for github: as long as the shape's minimum" 47 "${#PH_GH}"
t_eq "placeholder for model: as long as the value" "${#FILE_VALUE}" "${#PH_MODEL}"
t_nomatch "no value in the sandbox's output" "$ENV_VALUE|$FILE_VALUE" "$OUT"
OUT2=$(HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml -- /bin/sh -c 'echo "$GITHUB_TOKEN"' 2>&1)
t_nomatch "placeholders are random per run" "^$PH_GH\$" "$OUT2"

# The policy copy inside names the secrets, never a value or the file.
OUT=$(HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml -- /bin/cat /etc/moat/policy.yaml 2>&1)
t_match "policy copy inside: names the secret" "name: github" "$OUT"
t_nomatch "policy copy inside: no value, no key file" "$ENV_VALUE|$FILE_VALUE|model.key" "$OUT"

# The scans. Inside, the command scans every process it can read; outside
# (as root) the host scans every process of the sandbox, the init included,
# while the sandbox waits.
N_ENV=$(mask "$ENV_VALUE")
N_FILE=$(mask "$FILE_VALUE")
N_CTL=$(mask "$CONTROL")
rm -f out/*
HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml --rw "$MOAT_TDIR/out:/sync" --time 100s --mem 512M \
	--ro "$SCAN:/scan.py" --env "N_ENV=$N_ENV" --env "N_FILE=$N_FILE" --env "N_CTL=$N_CTL" -- /bin/sh -c '
		CONTROL_VALUE=$(printf %s "$N_CTL" | python3 -c "import sys; print(bytes(b ^ 0x5a for b in bytes.fromhex(sys.stdin.read())).decode())") \
			sh -c "exec sleep 100" &
		# Wait for the exec itself: the cmdline of this script holds the
		# same words, and so does the sh before it execs.
		up() { for c in /proc/[0-9]*/cmdline; do [ "$(tr "\\0" " " <"$c" 2>/dev/null)" = "sleep 100 " ] && return 0; done; return 1; }
		i=0; while ! up && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		python3 /scan.py --all --needle "$N_ENV" --needle "$N_FILE" --needle "$N_CTL" >/sync/inside.json
		: >/sync/ready
		i=0; while [ ! -e /sync/done ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
		kill $! 2>/dev/null' >run.out 2>&1 &
MOAT_PID=$!
i=0
while [ ! -e out/ready ] && [ $i -lt 900 ] && kill -0 "$MOAT_PID" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
INIT_PID=
if [ -e out/ready ]; then
	INIT_PID=$(pgrep -P "$MOAT_PID" | head -1)
	# The tree below moat (the supervisor, which holds the values by
	# design): the init and everything it started.
	python3 "$SCAN" --tree "$MOAT_PID" --needle "$N_ENV" --needle "$N_FILE" --needle "$N_CTL" >outside.json 2>outside.err
fi
: >out/done
wait "$MOAT_PID" && RC=0 || RC=$?
t_eq "scan run: exit 0" 0 "$RC" && [ "$RC" = 0 ] || sed "s/^/#   /" run.out

# report FILE: per process, what was readable and what was found.
report() {
	python3 - "$1" "${2:-}" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
found = [(p, h["needle"], h["where"]) for p, r in j.items() for h in r["hits"]]
# A sanitizer's runtime reads the whole environment block into memory of
# its own before main runs, which the init inherits: in such a build the
# value taken from the environment is not looked for in the init (the one
# from a file still is, everywhere).
if sys.argv[2]:
    found = [f for f in found if not (f[0] == sys.argv[2] and f[1] == 0)]
print("procs", len(j))
print("memory_procs", sum(1 for r in j.values() if r["memory"] > 0))
print("environ_procs", sum(1 for r in j.values() if r["environ"]))
print("secret_hits", [f for f in found if f[1] in (0, 1)])
print("control_mem", sum(1 for p, n, w in found if n == 2 and w != "environ" and w != "cmdline"))
print("control_env", sum(1 for p, n, w in found if n == 2 and w == "environ"))
print("init_memory", j.get("1", {}).get("memory", -1))
EOF
}
IN=$(report out/inside.json 2>&1)
t_match "inside: several processes were scanned" "^procs ([3-9]|[1-9][0-9])" "$IN"
t_match "inside: memory of some process was read" "memory_procs [1-9]" "$IN"
t_match "inside: the control value is found in memory (the scan can fail)" "control_mem [1-9]" "$IN"
t_match "inside: the control value is found in an environment" "control_env [1-9]" "$IN"
t_match "inside: no secret value in any environment, command line or memory" "secret_hits \[\]" "$IN"

if is_root; then
	if [ -n "${MOAT_SANITIZED:-}" ]; then
		OUTSIDE=$(report outside.json "$INIT_PID" 2>&1)
		t_na "outside: the environment's value in the init" "a sanitizer runtime copies the environment block before main"
	else
		OUTSIDE=$(report outside.json 2>&1)
	fi
	INIT_MEM=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j[sys.argv[2]]["memory"])' outside.json "$INIT_PID" 2>/dev/null)
	t_match "outside: the sandbox's processes were scanned" "^procs ([3-9]|[1-9][0-9])" "$OUTSIDE"
	t_match "outside: the init's memory was read" "^[1-9][0-9]{5,}$" "$INIT_MEM"
	t_match "outside: the control value is found (the scan can fail)" "control_mem [1-9]" "$OUTSIDE"
	t_match "outside: no secret value in any process of the sandbox, the init included" "secret_hits \[\]" "$OUTSIDE"
else
	t_na "outside: the init's memory" "a rootless host user cannot read the non-dumpable init; scanned as root"
fi

# The values never reach the run's outputs either: not in the audit log,
# nor in what a command prints about its environment.
HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml --audit audit.jsonl --result result.json -- /bin/sh -c 'env' >env.out 2>&1
t_eq "audit log, result, output: no value" "" "$(grep -l -e "$ENV_VALUE" -e "$FILE_VALUE" audit.jsonl result.json env.out 2>/dev/null)"

# Errors: each names the secret and never shows a value.
mrun run --policy policy.yaml -- /bin/true
t_eq "unset variable: 125" 125 "$RC"
t_match "unset variable: names the secret and the variable" "secrets.github: the variable HOST_GH_TOKEN is not set" "$ERR"
OUT=$(HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml --env HOST_GH_TOKEN -- /bin/true 2>&1) && RC=0 || RC=$?
t_eq "passing the secret's variable with --env: 125" 125 "$RC"
t_match "passing the secret's variable with --env: says why" "would carry the value of the secret github" "$OUT"
t_nomatch "passing the secret's variable with --env: no value in the message" "$ENV_VALUE" "$OUT"
OUT=$(HOST_GH_TOKEN="$ENV_VALUE" "$MOAT" run --policy policy.yaml --env GITHUB_TOKEN=mine -- /bin/true 2>&1) && RC=0 || RC=$?
t_eq "setting the placeholder's variable: 125" 125 "$RC"
t_match "setting the placeholder's variable: says why" "GITHUB_TOKEN is also set by env" "$OUT"
: >empty.key
OUT=$("$MOAT" run --secret K=file:"$MOAT_TDIR/empty.key"@api.example.com -- /bin/true 2>&1) && RC=0 || RC=$?
t_eq "empty key file: 125" 125 "$RC"
t_match "empty key file: says so" "secrets.K: .*empty.key is empty" "$OUT"

# The flag: the variable is read, the sandbox sees a placeholder of the
# variable's name.
OUT=$(MY_KEY="$ENV_VALUE" "$MOAT" run --secret API_KEY=env:MY_KEY@api.example.com -- /bin/sh -c 'echo "$API_KEY"; env | grep -c MY_KEY' 2>&1) && RC=0 || RC=$?
t_eq "--secret: exit 1 (no MY_KEY inside)" 1 "$RC"
t_match "--secret: the placeholder" "^moat_ph_api_key_[0-9a-f]{32,}" "$OUT"
t_nomatch "--secret: no value" "$ENV_VALUE" "$OUT"
