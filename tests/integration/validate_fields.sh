#!/bin/bash
# One validation for flags and policy files: the same bad value given as a
# flag and as the field of a policy file is refused with the same message,
# which names the field (the flags are folded into the policy and checked by
# the policy's own parser). Nothing is started: every run below must fail
# before a sandbox exists.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# same NAME 'FLAG' 'POLICY LINE' FIELD
#   FLAG: one --option=value; POLICY LINE: the same value as YAML.
same() {
	local name="$1" flag="$2" yaml="$3" field="$4"
	printf 'version: 1\n%s\n' "$yaml" >field.yaml
	local a b ra rb
	a=$("$MOAT" run "$flag" -- /bin/true 2>&1) && ra=0 || ra=$?
	b=$("$MOAT" run --policy field.yaml -- /bin/true 2>&1) && rb=0 || rb=$?
	t_eq "$name: the flag is refused" 125 "$ra"
	t_eq "$name: the policy field is refused" 125 "$rb"
	# The file's message carries its position; the rest must be the same.
	b=$(printf '%s' "$b" | sed -E 's/^moat: field\.yaml:[0-9]+:[0-9]+: /moat: /')
	t_eq "$name: the same message" "$b" "$a"
	t_match "$name: the message names $field" "^moat: $field: " "$a"
}

same "hostname with a space" "--hostname=a b" 'hostname: "a b"' hostname
same "hostname not ASCII" "--hostname=ü" 'hostname: "ü"' hostname
same "empty hostname" "--hostname=" 'hostname: ""' hostname
same "upper-case allowed host" "--allow-host=EXAMPLE.com" 'network: {allow: [{host: EXAMPLE.com}]}' \
	'network\.allow\[0\]\.host'
same "allowed host with a path" "--allow-host=a.test/x" 'network: {allow: [{host: a.test/x}]}' \
	'network\.allow\[0\]\.host'
# Network options are checked whatever the network mode (the code profile
# has none).
same "private range with host bits" "--allow-private=10.0.0.1/8" 'network: {allow_private: [10.0.0.1/8]}' \
	'network\.allow_private'
same "resolver not an address" "--resolver=nope" 'network: {resolver: nope}' 'network\.resolver'
same "resolver port 0" "--resolver=127.0.0.1:0" 'network: {resolver: "127.0.0.1:0"}' 'network\.resolver'
same "pinned name to a non-address" "--net-host=a.test=nope" 'network: {hosts: {a.test: nope}}' \
	'network\.hosts\.a\.test'
same "empty output folder" "--out=" 'filesystem: {out: ""}' 'filesystem\.out'
same "relative working folder" "--cwd=relative" 'filesystem: {cwd: relative}' 'filesystem\.cwd'
same "bind to a relative path" "--ro=/usr:relative" 'filesystem: {read_only: ["/usr:relative"]}' \
	'filesystem\.read_only'
same "bind over /dev/shm" "--rw=/tmp:/dev/shm" 'filesystem: {read_write: ["/tmp:/dev/shm"]}' \
	'filesystem\.read_write'
same "empty stdin" "--stdin=" 'stdin: ""' stdin
same "empty result" "--result=" 'result: ""' result
# --env is still read by the front first ("--env: "), then the same words.
a=$("$MOAT" run --env 1BAD=x -- /bin/true 2>&1)
printf 'version: 1\nenv: {1BAD: x}\n' >field.yaml
b=$("$MOAT" run --policy field.yaml -- /bin/true 2>&1 | sed -E 's/^moat: field\.yaml:[0-9]+:[0-9]+: //')
t_match "bad variable name: the flag's message ends with the policy's" "env: '1BAD' is not a variable name" "$a"
t_eq "bad variable name: the policy's message" "env: '1BAD' is not a variable name (expected letters, digits and '_')" "$b"
MOAT_TEST_FROM_CALLER=caller-value
export MOAT_TEST_FROM_CALLER
mrun run --env MOAT_TEST_FROM_CALLER --env MOAT_TEST_UNSET_HERE -- /bin/sh -c 'echo "$MOAT_TEST_FROM_CALLER ${MOAT_TEST_UNSET_HERE-unset}"'
t_eq "--env NAME passes the caller's value, an unset one is not passed" "caller-value unset" "$OUT"
same "empty audit log" "--audit=" 'audit: {log: ""}' 'audit\.log'

# --out "" used to mount the current folder at /out.
mkdir -p here
before=$(stat -c %u:%g:%a here)
(cd here && "$MOAT" run --out "" -- /bin/true >/dev/null 2>&1) && RC=0 || RC=$?
t_eq "--out '' is refused, not the current folder" 125 "$RC"
t_eq "--out '' leaves the current folder as it was" "$before" "$(stat -c %u:%g:%a here)"

# The values the checks must not refuse, as flags.
mrun run --hostname ok-1 --allow-host '[::1]:8080' --resolver '127.0.0.1:5353' --allow-private 10.0.0.0/8 \
	-- /bin/true
t_eq "good values pass as flags" 0 "$RC"
