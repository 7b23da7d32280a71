#!/bin/bash
# Values that overflow: every numeric limit is range-checked once, for a flag
# and for the same field in a policy file alike, with one line naming the
# field and the bound (and the flag, when a flag gave the value); the result
# reports what was applied and never a negative number; an rlimit beyond
# what moat may set is refused with the bound, never failed inside or
# capped silently.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# refused NAME REGEX ARGS...: exit 125, one line matching REGEX, nothing ran.
refused() {
	local name="$1" re="$2"
	shift 2
	rm -f ran
	mrun run "$@" -- /bin/sh -c ": > $MOAT_TDIR/ran"
	t_eq "$name: exit 125" 125 "$RC"
	t_match "$name: says the field and the bound" "$re" "$ERR"
	t_eq "$name: one line" 1 "$(printf '%s\n' "$ERR" | wc -l)"
}
refused "--cpu 18446744073709551s" '^moat: run: --cpu: limits\.cpu_time: 18446744073709551s is too large \(at most 8760h' \
	--cpu 18446744073709551s
refused "--mem 16000000T" '^moat: run: --mem: limits\.memory: 16000000T is too large \(at most 1024T' --mem 16000000T
refused "--pids 4194305" "^moat: run: --pids: limits\.pids: 4194305 is too large \\(at most 4194304, the kernel's limit" \
	--pids 4194305
refused "--files 99999999999" '^moat: run: --files: limits\.files: 99999999999 is too large \(at most 2147483647' \
	--files 99999999999
refused "--files 7" '^moat: run: --files: limits\.files: 7 is too small \(at least 8: the command' --files 7
refused "--output 9000T" '^moat: run: --output: limits\.output: 9000T is too large' --output 9000T
refused "--cpus 5000" '^moat: run: --cpus: limits\.cpu: 5000\.0 is too large \(at most 1000\.0' --cpus 5000
refused "--time 0" '^moat: run: --time: limits\.wall: 0s is too small' --time 0

# The same field from a policy file: the same check, the same words.
printf 'version: 1\nlimits: {memory: 16000000T}\n' >big.yaml
mrun policy check big.yaml
t_match "policy limits.memory: refused with the same message" 'limits\.memory: 16000000T is too large \(at most 1024T' "$ERR"
refused "policy limits.memory" 'limits\.memory: 16000000T is too large' --policy big.yaml

# At the largest values moat accepts, the result reports them as given, as
# non-negative integers.
mrun run --mem 1024T --output 1024T --fsize 1024T --time 8760h --cpu 8760h --result r.json -- /bin/true
t_eq "the largest values run" 0 "$RC"
t_eq "the result reports what was applied, never negative" \
	"1125899906842624 1125899906842624 31536000000 31536000000" \
	"$(json r.json '" ".join(str(j["enforced"][k]["limit"]) for k in ("memory","output","wall","cpu"))' 2>&1)"
t_eq "no negative number anywhere in the result" "" "$(grep -o ':-[0-9]' r.json)"

# A small descriptor limit bounds the command, not moat's own setup.
mrun run --files 8 -- /bin/sh -c 'ulimit -n'
t_eq "--files 8: the command runs with 8" "0 8" "$RC $OUT"

# rlimits the command's process sets on itself cannot exceed the hard
# limits it inherits: a larger value is refused with the bound.
hard_n=$(ulimit -Hn)
if [ "$hard_n" != unlimited ]; then
	refused "--files beyond the hard RLIMIT_NOFILE" \
		"limits\\.files: $((hard_n + 1)) is more than moat may set here \\(at most $hard_n, its hard RLIMIT_NOFILE" \
		--files $((hard_n + 1))
else
	t_na "--files beyond the hard RLIMIT_NOFILE" "no hard limit here"
fi
mrun run --result c.json -- /bin/true
if [ "$(json c.json 'j["enforced"]["pids"]["by"]')" = rlimit ]; then
	hard_u=$(ulimit -Hu)
	if [ "$hard_u" != unlimited ] && [ "$hard_u" -lt 4194304 ]; then
		refused "--pids beyond the hard RLIMIT_NPROC without a cgroup" \
			"limits\\.pids: $((hard_u + 1)) is more than moat may set here \\(at most $hard_u, its hard RLIMIT_NPROC" \
			--pids $((hard_u + 1))
	else
		t_na "--pids beyond the hard RLIMIT_NPROC" "no hard limit here"
	fi
	mrun run --cpu 1500ms --result c2.json -- /bin/true
	t_eq "without a cgroup, the CPU limit applied is whole seconds, and said so" 2000 \
		"$(json c2.json 'j["enforced"]["cpu"]["limit"]')"
else
	t_na "--pids beyond the hard RLIMIT_NPROC without a cgroup" "a cgroup enforces pids here"
fi
