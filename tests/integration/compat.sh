#!/bin/bash
# Legitimate programs work inside (docs/compatibility.md): everyday
# toolchains in the agent profile, and CPython's own regression modules,
# which must pass inside wherever they pass bare. The short form runs a few
# quick modules; MOAT_SOAK=1 (make soak) runs the whole list in both
# profiles.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

. "$MOAT_SRC/compat/toolchains.sh"

if ! /usr/bin/python3 -c 'import test.test_json' 2>/dev/null; then
	t_skip "CPython regression modules" "no libpython3.11-testsuite (scripts/install-deps installs it)"
	exit 0
fi
chmod 755 "$MOAT_TDIR"
# The full list takes an hour; the sanitizer pass of a soak (where moat, not
# the modules, is under test) keeps the short form.
if [ -n "${MOAT_SOAK:-}" ] && [ -z "${MOAT_SANITIZED:-}" ]; then
	MODULES="test_os test_subprocess test_socket test_asyncio test_multiprocessing_spawn test_ssl test_pty test_io
test_resource test_mmap test_threading test_signal test_select test_selectors test_tempfile test_shutil test_time
test_json test_posix test_fcntl test_zipfile test_tarfile test_pathlib test_venv"
	PROFILES="agent code"
else
	MODULES="test_pty test_fcntl test_select test_json"
	PROFILES="agent"
fi
for p in $PROFILES; do
	# shellcheck disable=SC2086
	python3 "$MOAT_SRC/compat/cpython.py" "$MOAT" "$p" "$MOAT_TDIR" $MODULES
done
