#!/bin/bash
# moat eval: the fixture's correct, wrong, crashing, timing-out and hostile
# samples get the verdicts they must; results stay in sample order under
# --parallel; gzip input; pass@k in the summary; bad input is refused with
# the file and line named.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
EX="$MOAT_STAGE/examples/eval"

ev() { # OUTFILE ARGS...: runs moat eval, keeping stdout in OUTFILE.
	local f="$1"
	shift
	"$MOAT" eval "$@" >"$f" 2>"$MOAT_TDIR/.err" && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# split LANGS OUT: the fixture's samples of problems in those languages
# (python is every problem that does not say).
split() {
	python3 - "$EX" "$1" >"$2" <<'PY'
import json, os, sys
ex, langs = sys.argv[1], sys.argv[2].split(",")
probs = [json.loads(l) for l in open(os.path.join(ex, "problems.jsonl"))]
keep = {p.get("task_id") or p["name"] for p in probs if p.get("language", "python") in langs}
for l in open(os.path.join(ex, "samples.jsonl")):
    if json.loads(l)["task_id"] in keep:
        sys.stdout.write(l)
PY
}
# check_verdicts SAMPLES RESULTS: one check per sample, its verdict against
# the one it must get.
check_verdicts() {
	python3 - "$1" "$2" >verdicts.txt <<'PY'
import json, sys
S = [json.loads(l) for l in open(sys.argv[1])]
R = [json.loads(l) for l in open(sys.argv[2])]
for s, r in zip(S, R):
    print("%s\t%s\t%s\t%s\t%s" % (s["task_id"], s["note"], s["expect"], r["verdict"], r["result"]))
PY
	while IFS=$'\t' read -r task note expect got result; do
		t_eq "$task: $note: $expect ($result)" "$expect" "$got"
	done <verdicts.txt
}

# The JavaScript samples need node; without it they are left out.
if [ -x /usr/bin/node ]; then
	split python,js samples.jsonl
else
	split python samples.jsonl
	t_skip "JavaScript samples" "no /usr/bin/node (apt-get install nodejs)"
fi

ev sum.out --problems "$EX/problems.jsonl" --samples samples.jsonl --time 5s --parallel 4 --k 1,2,1000 --out results.jsonl
t_eq "fixture: exit 0" 0 "$RC"
t_eq "fixture: nothing on stderr when it is not a terminal" "" "$ERR"
t_eq "fixture: one result line per sample" "$(wc -l <samples.jsonl)" "$(wc -l <results.jsonl)"
check_verdicts samples.jsonl results.jsonl
t_eq "results in sample order under --parallel" True "$(python3 -c '
import json,sys
R=[json.loads(l) for l in open("results.jsonl")]
print([r["sample"] for r in R] == list(range(len(R))) and [r["line"] for r in R] == list(range(1, len(R)+1)))')"
t_eq "result lines in human-eval's layout" True "$(python3 -c '
import json
r=json.loads(open("results.jsonl").readline())
print(all(k in r for k in ("task_id","completion","passed","result","verdict","wall_ms","cpu_ms","memory_peak_bytes")) and r["passed"] is True and r["result"] == "passed")')"
t_eq "summary: counts and the histogram match the lines" True "$(python3 -c '
import json, collections
R=[json.loads(l) for l in open("results.jsonl")]
s=json.loads(open("sum.out").read())
print(s["summary"] and s["samples"] == len(R) and s["passed"] == sum(r["passed"] for r in R)
      and s["verdicts"] == dict(collections.Counter(r["verdict"] for r in R)))')"
t_eq "summary: pass@1 and pass@2 given, pass@1000 (more than any task has) not" "True True False" "$(python3 -c '
import json
s=json.loads(open("sum.out").read())["pass@k"]
print("pass@1" in s, "pass@2" in s, "pass@1000" in s)')"
t_eq "summary: pass@1 is the mean per-task pass rate" True "$(python3 -c '
import json, collections
R=[json.loads(l) for l in open("results.jsonl")]
n=collections.Counter(r["task_id"] for r in R); c=collections.Counter(r["task_id"] for r in R if r["passed"])
want=sum(c[t]/n[t] for t in n)/len(n)
print(abs(json.loads(open("sum.out").read())["pass@k"]["pass@1"] - want) < 1e-9)')"

# The nonce hunter is a real attack: against the harness with its
# defenses taken out it finds the nonce and forges a pass.
if [ -f "$MOAT_STAGE/harness/eval.py" ]; then
	python3 - "$MOAT_STAGE/harness/eval.py" "$EX" <<'PY'
import json, sys
h = open(sys.argv[1]).read()
weak = h.replace("    sys.addaudithook(hook)\n", "").replace(
    "if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:", "if False:")
assert weak != h and weak.count("addaudithook(hook)") == 0
open("weak.py", "w").write(weak)
probs = {json.loads(l).get("task_id"): json.loads(l) for l in open(sys.argv[2] + "/problems.jsonl")}
steal = [json.loads(l) for l in open(sys.argv[2] + "/samples.jsonl") if "hunts" in l][0]["solution"].encode()
req = b"ab" * 16 + b"\nadd\n" + str(len(steal)).encode() + b"\n" + steal + probs["fixture/add"]["test"].encode()
open("steal.req", "wb").write(req)
PY
	"$MOAT" run --time 20s --stdin steal.req -- /usr/bin/python3 -I -c "$(cat weak.py)" >weak.out 2>weak.err || true
	t_match "the nonce hunter forges a pass against a harness without its defenses" \
		"moat-eval:(ab){16} pass" "$(cat weak.out weak.err)"
else
	t_fail "the nonce hunter against a weakened harness" "no harness/eval.py staged"
fi

# C and C++ (MultiPL-E), compiled inside each sandbox: the compiler needs
# more time and memory than a Python sample, which those problems' own
# "limits" give over the command line's.
if [ -x /usr/bin/gcc ] && [ -x /usr/bin/g++ ]; then
	split c,cpp csamples.jsonl
	ev csum.out --problems "$EX/problems.jsonl" --samples csamples.jsonl --time 5s --mem 128M \
		--parallel 2 --out cresults.jsonl
	t_eq "C and C++: exit 0" 0 "$RC"
	check_verdicts csamples.jsonl cresults.jsonl
else
	t_skip "C and C++ samples" "no /usr/bin/gcc and /usr/bin/g++ (apt-get install gcc g++)"
fi

# Results on stdout, then the summary, without --out; gzip'd input.
gzip -c "$EX/problems.jsonl" >problems.jsonl.gz
grep '"fixture/add"' samples.jsonl | head -2 | gzip -c >two.jsonl.gz
ev two.out --problems problems.jsonl.gz --samples two.jsonl.gz --parallel 2
t_eq "gzip: exit 0" 0 "$RC"
t_eq "gzip: two result lines then the summary" "pass fail summary" "$(python3 -c '
import json
print(" ".join("summary" if "summary" in j else j["verdict"] for j in map(json.loads, open("two.out"))))')"

# On a terminal, a progress bar with the rate and the time left on stderr.
if command -v script >/dev/null 2>&1; then
	script -qec "$MOAT eval --problems problems.jsonl.gz --samples two.jsonl.gz --out /dev/null" /dev/null >tty.out 2>&1 </dev/null || true
	t_match "a progress bar on a terminal" 'eval \[#+\] 2/2 .*/s +ETA 0:00' "$(tr '\r' '\n' <tty.out)"
else
	t_skip "progress bar" "no script(1) (apt-get install util-linux)"
fi

# Bad input: one clear line naming the file and line; nothing runs.
printf '{"task_id": "fixture/add", "completion": "    return a + b\\n"}\n{"task_id": "nope", "completion": ""}\n' >unknown.jsonl
ev bad.out --problems "$EX/problems.jsonl" --samples unknown.jsonl
t_eq "unknown task_id: exit 125" 125 "$RC"
t_eq "unknown task_id: the file and line" 'moat: eval: unknown.jsonl:2: unknown task_id "nope" (not in the problems)' "$ERR"
printf '{"task_id": "fixture/add", "completion": "x"\n' >badjson.jsonl
ev bad.out --problems "$EX/problems.jsonl" --samples badjson.jsonl
t_eq "bad JSON: exit 125" 125 "$RC"
t_match "bad JSON: the file and line" '^moat: eval: badjson.jsonl:1: bad JSON' "$ERR"
cat "$EX/problems.jsonl" "$EX/problems.jsonl" >dup.jsonl
ev bad.out --problems dup.jsonl --samples samples.jsonl
t_eq "duplicate task_id: the lines" "moat: eval: dup.jsonl:$(($(wc -l <"$EX/problems.jsonl") + 1)): task_id \"fixture/add\" is already on line 1" "$ERR"
ev bad.out --problems "$EX/problems.jsonl" --samples samples.jsonl --net proxy --allow-host example.com
t_eq "network refused: exit 125" 125 "$RC"
t_match "network refused: says why" 'without network' "$ERR"
ev bad.out --problems "$EX/problems.jsonl" --samples samples.jsonl --k 0
t_eq "--k 0 refused" 125 "$RC"
ev bad.out --problems "$EX/problems.jsonl" --samples samples.jsonl --language cobol
t_eq "--language cobol refused" 125 "$RC"
