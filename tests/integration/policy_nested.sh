#!/bin/bash
# A run started inside a sandbox is bounded by the policy it runs under:
# the sandbox carries its effective policy read-only at /etc/moat/policy.yaml
# and points MOAT_PARENT_POLICY there.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

mrun run --mem 100M -- /bin/sh -c 'echo $MOAT_PARENT_POLICY; grep "memory:" /etc/moat/policy.yaml; echo x > /etc/moat/policy.yaml'
t_eq "the sandbox knows its policy" "/etc/moat/policy.yaml" "$(printf '%s\n' "$OUT" | head -1)"
t_match "the policy inside is the effective one (flags folded in)" "memory: 100M" "$OUT"
t_eq "and it cannot be rewritten from inside" 2 "$RC"

# The copy inside shows the sandbox's view: binds where they are inside,
# never the host folders behind them nor where a secret file lives.
mkdir -p "$MOAT_TDIR/nest-data" "$MOAT_TDIR/nest-out" "$MOAT_TDIR/nest-sec"
is_root && chown 65534:65534 "$MOAT_TDIR/nest-out"
printf 'tok\n' >"$MOAT_TDIR/nest-sec/token"
cat >"$MOAT_TDIR/nest.yaml" <<EOF
version: 1
filesystem:
  read_only: ["$MOAT_TDIR/nest-data:/data"]
  out: $MOAT_TDIR/nest-out
secrets:
  TOKEN: {from: "file:$MOAT_TDIR/nest-sec/token", hosts: [api.example.com]}
EOF
mrun run --policy "$MOAT_TDIR/nest.yaml" -- /bin/cat /etc/moat/policy.yaml
t_eq "the policy copy is readable inside" 0 "$RC"
t_nomatch "the policy copy names no host path" "$MOAT_TDIR" "$OUT"
t_match "it names the binds by their path inside" "- /data" "$OUT"

if [ -n "${MOAT_SANITIZED:-}" ]; then
	# An instrumented moat cannot itself run inside a sandbox: LeakSanitizer
	# needs ptrace, which the sandbox forbids, and ASan's shadow memory does
	# not fit an address-space limit. The plain build runs these checks.
	for n in "a nested run asking for more memory is refused" "a nested run asking for less is fine" \
		"a nested run asking for network the parent lacks is refused"; do
		t_na "$n" "instrumented build"
	done
	exit 0
fi
mrun run --mem 100M --ro "$MOAT:/opt/moat" -- /opt/moat policy show --mem 1G
t_eq "a nested run asking for more memory is refused" 125 "$RC"
t_match "naming the field" "limits.memory" "$ERR"
mrun run --mem 100M --ro "$MOAT:/opt/moat" -- /opt/moat policy show --mem 50M
t_eq "a nested run asking for less is fine" 0 "$RC"
t_match "and gets what it asked" "memory: 50M" "$OUT"
mrun run --ro "$MOAT:/opt/moat" -- /opt/moat policy show --allow-host api.example.com
t_eq "a nested run asking for network the parent lacks is refused" 125 "$RC"
