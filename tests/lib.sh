# Shared helpers for integration tests. Each test script sources this file,
# calls t_ok / t_fail (or the assert helpers) once per check, and prints TAP
# lines that tests/run counts. Variables set by tests/run:
#   MOAT        the moat binary under test
#   MOAT_MODE   root | rootless
#   MOAT_TDIR   a private scratch folder for this script (removed afterwards)
#   MOAT_ATTACKS folder of compiled attack programs
#   MOAT_PROGRAMS folder of compiled limit-hitting programs (tests/programs)
#   MOAT_SRC    the tests folder (read-only copy)

: "${MOAT:?}" "${MOAT_MODE:?}" "${MOAT_TDIR:?}"
T_PREFIX="${T_PREFIX:-$(basename "$0" .sh)}"

t_ok() { echo "ok - [$MOAT_MODE] $T_PREFIX: $1"; }
t_fail() {
	echo "not ok - [$MOAT_MODE] $T_PREFIX: $1"
	shift
	for l in "$@"; do printf '#   %s\n' "$l"; done
}
t_skip() {
	if [ "${CI:-}" = true ]; then
		t_fail "$1" "skipped in CI: $2"
	else
		echo "ok - [$MOAT_MODE] $T_PREFIX: $1 # SKIP $2"
	fi
}

# t_na NAME WHY: a check that by design applies to the other mode only (not a
# missing kernel feature, which t_skip reports and CI counts as a failure).
t_na() { echo "ok - [$MOAT_MODE] $T_PREFIX: $1 # SKIP $2"; }

# t_check NAME CMD...: passes when CMD succeeds.
t_check() {
	name="$1"
	shift
	if out=$("$@" 2>&1); then t_ok "$name"; else t_fail "$name" "command failed: $*" "$out"; fi
}

# t_eq NAME EXPECTED ACTUAL
t_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "expected: $2" "actual:   $3"; fi
}

# t_match NAME REGEX ACTUAL
t_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_ok "$1"; else t_fail "$1" "expected to match: $2" "actual: $3"; fi
}

# t_nomatch NAME REGEX ACTUAL
t_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_fail "$1" "must not match: $2" "actual: $3"; else t_ok "$1"; fi
}

# mrun ARGS...: runs moat, capturing stdout in $OUT, stderr in $ERR, status in $RC.
mrun() {
	OUT=$("$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# json FILE EXPR: evaluates a Python expression on the parsed JSON file (j).
json() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

is_root() { [ "$MOAT_MODE" = root ]; }

# upstream_certs NAME...: in the current folder, a test authority (ca.pem,
# ca.key) and a server certificate it signed (srv.pem, srv.key) for the DNS
# names given (the first is its CN), readable by the sandbox's user; for the
# HTTPS upstreams the gateway's TLS tests start themselves.
upstream_certs() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj "/CN=moat test upstream CA" \
		-addext basicConstraints=critical,CA:TRUE >/dev/null 2>&1
	openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=$1" >/dev/null 2>&1
	local san="" n
	for n in "$@"; do san="$san${san:+,}DNS:$n"; done
	printf 'subjectAltName=%s\n' "$san" >ext
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 -extfile ext >/dev/null 2>&1
	chmod 644 ca.pem srv.pem srv.key
}

# Wall-time bounds: a check on how long something took compares it with
# what this machine, at its present load, takes for a plain run measured
# just before, never with a fixed figure alone (the suite runs on loaded
# machines, two scripts at a time).
# ms_of CMD...: runs CMD (output discarded) and prints its wall time in ms.
ms_of() {
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	echo $((($(date +%s%N) - t0) / 1000000))
}
# baseline_ms CMD...: the slowest of three runs of CMD, in ms.
baseline_ms() {
	local m=0 t
	for _ in 1 2 3; do
		t=$(ms_of "$@")
		[ "$t" -gt "$m" ] && m=$t
	done
	echo "$m"
}

# in_other_mode N: true when the Nth attack is left to the other mode. In a
# sanitizer build run as root, where both modes run, each attack runs in one
# of them, alternating (odd ones as root, even ones rootless): that pass is
# there for moat's memory errors, which an attack finds in either mode, and
# the plain pass runs every attack in both. MOAT_SOAK=1 runs all in both.
in_other_mode() {
	[ -n "${MOAT_SANITIZED:-}" ] && [ -z "${MOAT_SOAK:-}" ] || return 1
	case " ${MOAT_MODES:-} " in *" root "*) ;; *) return 1 ;; esac
	case " ${MOAT_MODES:-} " in *" rootless "*) ;; *) return 1 ;; esac
	if is_root; then [ $(($1 % 2)) -eq 0 ]; else [ $(($1 % 2)) -eq 1 ]; fi
}
# other_mode: the mode in_other_mode leaves an attack to.
other_mode() { if is_root; then echo rootless; else echo root; fi; }

# private_sessions: this script's sessions (and sandboxes, logs and
# workspaces) live where no other script's `moat session ls` lists them or
# says hello to their keepers, and a count of entries there counts only
# what this script made. Rootless: a runtime folder of its own
# (XDG_RUNTIME_DIR). As root (one /run/moat for all): the script runs
# again in a mount namespace of its own with a fresh tmpfs on /run/moat,
# which the keepers it starts inherit. Call it first, before any session.
private_sessions() {
	if ! is_root; then
		mkdir -m 700 -p "$MOAT_TDIR/xdg"
		export XDG_RUNTIME_DIR="$MOAT_TDIR/xdg"
		return 0
	fi
	if [ -z "${MOAT_PRIVATE_RUN:-}" ]; then
		command -v unshare >/dev/null ||
			{ t_fail "a private /run/moat for this script's sessions" "unshare (util-linux) is missing"; exit 0; }
		mkdir -p /run/moat
		MOAT_PRIVATE_RUN=1 exec unshare -m --propagation private bash "$0"
	fi
	mount -t tmpfs -o mode=0711,size=256m moat-test /run/moat ||
		{ t_fail "a private /run/moat for this script's sessions" "mount failed"; exit 0; }
}
