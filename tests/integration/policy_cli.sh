#!/bin/bash
# moat policy check|explain|show: golden summaries, one check per class of
# error (message and line:column), profiles from any folder, show with flags.
. "$MOAT_SRC/lib.sh"
G="$MOAT_SRC/golden"
cd "$MOAT_TDIR"

# Golden summaries: explain prints exactly the reviewed text.
for f in "$G"/*.yaml "$G"/*.json; do
	name=$(basename "${f%.*}")
	mrun policy explain "$f"
	t_eq "explain $name: exit 0" 0 "$RC"
	t_eq "explain $name: matches golden" "$(cat "$G/$name.explain")" "$OUT"
	mrun policy check "$f"
	t_eq "check $name: ok" "ok" "$OUT"
done

# One file per class of error: exit 125 and the exact message, with
# FILE:LINE:COL, on stderr.
for f in "$G"/errors/*.yaml; do
	name=$(basename "$f" .yaml)
	OUT=$(cd "$G" && "$MOAT" policy check "errors/$name.yaml" 2>&1 >/dev/null) && RC=0 || RC=$?
	t_eq "error $name: exit 125" 125 "$RC"
	t_eq "error $name: message" "$(sed "s|@DIR@|$G/errors|" "$G/errors/$name.err")" "$OUT"
done

# Several files: each named, and the status says whether all were fine.
mrun policy check "$G/grader.json" "$G/errors/alias.yaml"
t_eq "check several: 125 when one fails" 125 "$RC"
t_match "check several: the good one is ok" "grader.json: ok" "$OUT"

# Profiles are built in: they work from a folder without them.
cd /
for p in code agent; do
	mrun policy explain --profile "$p"
	t_eq "profile $p from any folder" 0 "$RC"
	t_match "profile $p is named" "^policy $p" "$OUT"
done
mrun policy explain --profile nope
t_eq "unknown profile: 125" 125 "$RC"
t_match "unknown profile names the choices" "expected one of: agent, code" "$ERR"
cd "$MOAT_TDIR"

# The installed YAML files and the embedded ones say the same.
if [ -d "$MOAT_STAGE/profiles" ]; then
	for p in code agent; do
		a=$("$MOAT" policy show --profile "$p" 2>&1)
		b=$("$MOAT" policy show --policy "$MOAT_STAGE/profiles/$p.yaml" 2>&1)
		t_eq "profile $p: file and embedded copy agree" "$a" "$b"
	done
fi

# show prints the effective policy; it is a valid policy itself and reads
# back to the same text; flags change single fields on top.
mrun policy show
t_match "show defaults to the code profile" "name: code" "$OUT"
t_match "code profile: memory 256M" "memory: 256M" "$OUT"
printf '%s\n' "$OUT" >shown.yaml
mrun policy check shown.yaml
t_eq "shown policy checks ok" ok "$OUT"
mrun policy show --policy shown.yaml
t_eq "shown policy reads back the same" "$(cat shown.yaml)" "$OUT"
mrun policy show --profile agent --mem 1G --time 30s --env A=1
t_match "flag --mem overrides" "memory: 1G" "$OUT"
t_match "flag --time overrides" "wall: 30s" "$OUT"
t_match "flag --env adds" "- A=1" "$OUT"
t_match "other fields keep the profile's" "pids: 512" "$OUT"
mrun policy show --profile code --policy shown.yaml
t_eq "--profile and --policy together: 125" 125 "$RC"
mrun policy show --mem lots
t_eq "bad flag value: 125" 125 "$RC"

# --secret NAME=env:VAR@HOST: a list entry bound to the host, checked as
# the policy file's field is; never the value itself.
mrun policy show --secret MODEL_KEY=env:HOST_MODEL_KEY@api.example.com
t_eq "--secret: exit 0" 0 "$RC"
t_match "--secret: the list form" "- name: MODEL_KEY" "$OUT"
t_match "--secret: from the variable" "from: env:HOST_MODEL_KEY" "$OUT"
t_match "--secret: the placeholder's variable" "env: MODEL_KEY" "$OUT"
t_match "--secret: bound to the host" "host: api.example.com" "$OUT"
t_match "--secret: egress through the gateway" "mode: proxy" "$OUT"
mrun policy show --secret MODEL_KEY=sk-live-1234@api.example.com
t_eq "--secret with an inline value: 125" 125 "$RC"
t_match "--secret with an inline value: says why" "the value itself is never written in a policy" "$ERR"
t_eq "--secret with an inline value: not echoed" "" "$(printf '%s\n' "$ERR" | grep -o 'sk-live-1234')"
mrun policy show --secret MODEL_KEY=env:K@"*.com"
t_eq "--secret to a too wide pattern: 125" 125 "$RC"
mrun policy show --secret MODEL_KEY=env:K
t_eq "--secret without a host: 125" 125 "$RC"
t_match "--secret without a host: the form" "expected NAME=env:VAR@HOST" "$ERR"

# Nesting: under a parent policy, a child may only narrow it.
printf 'version: 1\nlimits: {memory: 128M, wall: 5s}\n' >parent.yaml
export MOAT_PARENT_POLICY="$MOAT_TDIR/parent.yaml"
mrun policy show
t_eq "nested: code defaults narrowed to the parent" "memory: 128M" "$(printf '%s\n' "$OUT" | grep -o 'memory: .*')"
mrun policy show --mem 1G
t_eq "nested: a wider flag is refused" 125 "$RC"
t_match "nested: the field is named" "limits.memory: 1G exceeds the parent's 128M" "$ERR"
mrun policy show --profile agent
t_eq "nested: a wider profile is refused" 125 "$RC"
mrun run --mem 1G -- /bin/true
t_eq "nested: moat run refuses the wider flag too" 125 "$RC"
unset MOAT_PARENT_POLICY

mrun policy
t_eq "policy without a command: 125" 125 "$RC"
mrun policy frobnicate
t_eq "unknown policy command: 125" 125 "$RC"
