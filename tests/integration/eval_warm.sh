#!/bin/bash
# moat eval's warm path (docs/eval.md, "Throughput"): Python samples forked
# from a warm interpreter get exactly the verdicts and the isolation a cold
# sandbox gives them. The fixture's Python samples are run warm and cold
# (MOAT_EVAL_WARM=0) and must agree line by line; then samples that exec the
# eval_warm_* attack programs (tests/attacks) aim at the warm interpreter,
# at the next sample and at the sample's limits, one worker so that every
# sample is forked in the same sandbox after the one before.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
EX="$MOAT_STAGE/examples/eval"

python3 - "$EX" >py.jsonl <<'PY'
import json, os, sys
ex = sys.argv[1]
probs = [json.loads(l) for l in open(os.path.join(ex, "problems.jsonl"))]
keep = {p["task_id"] for p in probs if p.get("language", "python") == "python" and "limits" not in p}
for l in open(os.path.join(ex, "samples.jsonl")):
    if json.loads(l)["task_id"] in keep:
        sys.stdout.write(l)
PY
N=$(wc -l <py.jsonl)

"$MOAT" eval --problems "$EX/problems.jsonl" --samples py.jsonl --parallel 2 --time 5s --out warm.jsonl \
	>warm.sum 2>err.out && RC=0 || RC=$?
t_eq "warm: exit 0" 0 "$RC"
WARM=$(json warm.sum 'j["warm_samples"]' 2>/dev/null || echo none)
# The warm path needs a cgroup that enforces the sample's limits (as root,
# or with a delegated one) and Landlock's scoping (ABI 6); without them
# every sample runs cold, which the summary says.
ABI=$(python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))')
if [ "$MOAT_MODE" = root ] && [ "$ABI" -ge 6 ]; then
	t_eq "warm: every Python sample ran warm" "$N" "$WARM"
elif [ "$ABI" -lt 6 ]; then
	t_skip "warm: every Python sample ran warm" "Landlock ABI $ABI: no scoping (kernel 6.12), every sample ran cold"
elif [ "$WARM" = 0 ]; then
	t_na "warm: every Python sample ran warm" "no cgroup of this user's enforces the limits: every sample ran cold"
else
	t_eq "warm: every Python sample ran warm" "$N" "$WARM"
fi
MOAT_EVAL_WARM=0 "$MOAT" eval --problems "$EX/problems.jsonl" --samples py.jsonl --parallel 2 --time 5s \
	--out cold.jsonl >cold.sum 2>>err.out && RC=0 || RC=$?
t_eq "cold: exit 0" 0 "$RC"
t_eq "cold: no sample ran warm" 0 "$(json cold.sum 'j["warm_samples"]')"
verdicts() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["sample"], r["verdict"], r["result"], r["status"], r["exit_code"], r["limit"])' "$1"; }
t_eq "warm and cold agree on every sample's verdict, result and status" "$(verdicts cold.jsonl)" "$(verdicts warm.jsonl)"
# A warm sample's stdout and stderr reach moat as one pipe: no per-stream
# count is claimed for it (null), and output_bytes, their sum, is the
# cold run's stdout_bytes + stderr_bytes.
outputs() { python3 -c 'import json,sys
for c, w in zip(open(sys.argv[1]), open(sys.argv[2])):
    c, w = json.loads(c), json.loads(w)
    if "output_bytes" in w:
        print(c["sample"], w["stdout_bytes"], w["stderr_bytes"], w["output_bytes"] == c["stdout_bytes"] + c["stderr_bytes"])
    else:
        print(c["sample"], None, None, (w["stdout_bytes"], w["stderr_bytes"]) == (c["stdout_bytes"], c["stderr_bytes"]))' "$1" "$2"; }
t_eq "warm: stdout_bytes and stderr_bytes null, output_bytes the cold run's two together" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]): print(json.loads(l)["sample"], None, None, True)' cold.jsonl)" "$(outputs cold.jsonl warm.jsonl)"
t_eq "warm: each sample run warm has output_bytes in place of the two" "$WARM" \
	"$(python3 -c 'import json,sys; print(sum("output_bytes" in json.loads(l) for l in open(sys.argv[1])))' warm.jsonl)"

# The attacks, each as a sample that execs the attack program: a verdict of
# BLOCKED is exit 0 ("exited with code 0 before the tests finished"),
# ESCAPED exit 1. The leftover attack runs twice: the second copy looks for
# what the first left.
python3 - >attacks.jsonl <<'PY'
import json
good = "def add(a, b):\n    return a + b\n"
def sample(note, solution):
    print(json.dumps({"task_id": "fixture/add", "solution": solution, "note": note}))
for a in ("signal", "memory", "fds", "cgroup", "leftover", "leftover"):
    sample(a, "import os\nos.execv('/attacks/attack_eval_warm_%s', ['attack'])\n" % a)
    sample("correct after " + a, good)
# A worker keeps the cgroups of the samples that ended and makes them new
# again for later ones, a few samples on: six samples after each of these,
# one of them in the cgroup it left, must get their own verdicts and figures.
after = lambda note: [sample(note, good) for _ in range(6)]
sample("charge", "import os\nos.execv('/attacks/attack_eval_warm_charge', ['attack'])\n")
after("correct after the charges")
sample("fills memory", "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n" + good)
after("correct after the memory hog")
sample("forks past its pids limit",
       "import os, time\nfor _ in range(64):\n    if os.fork() == 0:\n        time.sleep(30)\n" + good)
after("correct after the fork bomb")
sample("spins past its time", "while True:\n    pass\n" + good)
after("correct after the spinner")
PY
"$MOAT" eval --problems "$EX/problems.jsonl" --samples attacks.jsonl --parallel 1 --time 3s --mem 128M --pids 32 \
	--ro "$MOAT_ATTACKS:/attacks" --out attacks.out >attacks.sum 2>>err.out && RC=0 || RC=$?
t_eq "attacks: exit 0" 0 "$RC"
python3 - attacks.jsonl attacks.out >attacks.txt <<'PY'
import json, sys
S = [json.loads(l) for l in open(sys.argv[1])]
R = [json.loads(l) for l in open(sys.argv[2])]
for s, r in zip(S, R):
    print("%s\t%s\t%s\t%s\t%s" % (s["note"], r["verdict"], r["result"], r.get("memory_peak_bytes"), r.get("cpu_ms")))
PY
t_eq "attacks: one line per sample" "$(wc -l <attacks.jsonl)" "$(wc -l <attacks.txt)"
while IFS=$'\t' read -r note verdict result peak cpu; do
	case "$note" in
	"correct after"*) t_eq "$note: passes" "pass" "$verdict" ;;
	"fills memory")
		# Without a cgroup (rootless, cold) the memory limit is
		# RLIMIT_AS: the hog gets a MemoryError instead.
		if [ "$WARM" = 0 ] && [ "$MOAT_MODE" = rootless ]; then
			t_match "$note: oom or MemoryError" "^(oom|error)$" "$verdict"
		else
			t_eq "$note: oom" "oom" "$verdict"
		fi ;;
	"forks past its pids limit")
		# Without a cgroup (rootless, cold) RLIMIT_NPROC refuses the
		# fork: a BlockingIOError.
		if [ "$WARM" = 0 ] && [ "$MOAT_MODE" = rootless ]; then
			t_match "$note: pids_limit or BlockingIOError" "^(pids_limit|error)$" "$verdict"
		else
			t_eq "$note: pids_limit" "pids_limit" "$verdict"
		fi ;;
	"spins past its time") t_eq "$note: timeout" "timeout" "$verdict" ;;
	*) t_eq "attack eval_warm_$note: blocked" "failed: exited with code 0 before the tests finished" "$result" ;;
	esac
	# A sample's peak is its own: the hog's 128M stays with it, and so
	# do the 32M and more the charges left (a correct sample peaks near 1M).
	case "$note" in "correct after the memory hog" | "correct after the charges")
		[ -n "$peak" ] && [ "$peak" != None ] &&
			{ [ "$peak" -lt $((12 << 20)) ] && t_ok "$note: its own memory peak ($peak bytes)" ||
				t_fail "$note: its own memory peak" "peak $peak bytes"; } ;;
	esac
	# Its CPU time is its own too: the spinner before it ran 3 s (its
	# child was waiting in a cgroup of its own meanwhile), the process
	# the charges left spun until it was killed.
	case "$note" in "correct after the spinner" | "correct after the charges") ;; *) false ;; esac &&
		[ -n "$cpu" ] && [ "$cpu" != None ] &&
		{ [ "$cpu" -lt 1000 ] && t_ok "$note: its own CPU time ($cpu ms)" ||
			t_fail "$note: its own CPU time" "$cpu ms"; }
done <attacks.txt
[ -s err.out ] && t_fail "nothing on stderr" "$(head -5 err.out)" || t_ok "nothing on stderr"
