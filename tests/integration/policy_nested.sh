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
