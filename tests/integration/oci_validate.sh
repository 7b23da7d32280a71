#!/bin/bash
# The OCI runtime validation suite (opencontainers/runtime-tools v0.9.0,
# kept beside the checkout at ../shared/oci/validate) against moat-oci: the
# tests moat passes in full (docs/oci.md lists the counts of the whole
# suite and why the rest fail or are refused). The suite runs as root.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

V="${MOAT_OCI_VALIDATE:-${MOAT_REPO:-}/../shared/oci/validate}"
if ! is_root; then
	t_na "oci validation suite" "the suite runs runtimes as root"
	exit 0
fi
if [ ! -x "$V" ]; then
	# Not part of this repository: a checkout without it beside it (a
	# clone elsewhere) has nothing to run, in CI too.
	t_na "oci validation suite" "not found at ../shared/oci/validate beside this checkout (set MOAT_OCI_VALIDATE)"
	exit 0
fi
if ! command -v go >/dev/null; then
	t_skip "oci validation suite" "needs Go (Debian: golang-go) to build"
	exit 0
fi
mkdir -p bin
ln -sf "$MOAT" bin/moat-oci
# (misc_props is not among them: its first check makes a bundle whose
# process, /runtimetest, is not in the root, and create fails, as runc's.)
tests=(create state kill kill_no_effect delete_only_create_resources config_updates_without_affect
	linux_seccomp linux_ns_path_type linux_cgroups_cpus)
out=$(timeout 1200 "$V" "$MOAT_TDIR/bin/moat-oci" "${tests[@]}" 2>&1)
for t in "${tests[@]}"; do
	line=$(grep -E "^$t: " <<<"$out")
	t_match "validation: $t passes in full" '^[^:]+: [1-9][0-9]* passed, 0 failed' "$line"
done
t_match "validation: no test errored" 'errored 0\)' "$(tail -1 <<<"$out")"
# The container's cgroup is at linux.cgroupsPath with the spec's limits;
# the one check these fail is the pids limit, whose 1000 the policy's 64
# narrows (docs/oci.md).
out=$(timeout 600 "$V" "$MOAT_TDIR/bin/moat-oci" linux_cgroups_pids delete_resources 2>&1)
for t in linux_cgroups_pids delete_resources; do
	t_match "validation: $t fails only on the narrowed pids limit" "^$t: [1-9][0-9]* passed, 1 failed" \
		"$(grep -E "^$t: " <<<"$out")"
	t_match "validation: $t: the failure is the pids limit" 'pids limit is set correctly' \
		"$(grep -A1 -E "^$t: " <<<"$out" | tail -1)"
done
