#!/bin/bash
# moat run: bad input gets one clear line on stderr, exit 125, and the host
# loses nothing.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

check_bad() { # NAME REGEX ARGS...
	local name="$1" re="$2"
	shift 2
	local before after
	before=$(ls -A "$MOAT_TDIR" | sort | tr '\n' ' ')
	mrun "$@"
	after=$(ls -A "$MOAT_TDIR" | grep -v '^\.err$' | sort | tr '\n' ' ')
	t_eq "$name: exit 125" 125 "$RC"
	t_match "$name: says what is wrong" "$re" "$ERR"
	t_eq "$name: one line" 1 "$(printf '%s\n' "$ERR" | wc -l)"
	t_eq "$name: nothing created" "$(echo "$before" | sed 's/\.err //')" "$after"
}

check_bad "unknown option" "unknown option '--frobnicate'" run --frobnicate -- /bin/true
check_bad "missing option value" "needs a value" run --time
check_bad "empty command" "no command given" run --
check_bad "no command at all" "no command given" run
check_bad "missing bind source" "/nonexistent-moat: No such file" run --ro /nonexistent-moat:/x -- /bin/true
check_bad "relative sandbox path" "filesystem.read_only: .relative. is not a clean absolute sandbox path" run --ro /usr:relative -- /bin/true
check_bad "bind over /proc" "filesystem.read_only: moat builds /proc itself" run --ro /usr:/proc -- /bin/true
check_bad "bind over /dev" "filesystem.read_write: moat builds /dev/shm itself" run --rw /tmp:/dev/shm -- /bin/true
check_bad "bind with dot-dot" "filesystem.read_only: '/a/\.\./b' is not a clean absolute sandbox path" run --ro /usr:/a/../b -- /bin/true
check_bad "bad duration" "is not a duration" run --time 5x -- /bin/true
check_bad "zero time" "--time: limits.wall: 0s is too small \\(at least 1ms\\)" run --time 0 -- /bin/true
check_bad "bad size" "is not a size" run --mem lots -- /bin/true
check_bad "zero pids" "at least 1" run --pids 0 -- /bin/true
check_bad "missing --out" "filesystem.out: .*No such file" run --out "$MOAT_TDIR/none" -- /bin/true
check_bad "missing --stdin" "stdin: .*No such file" run --stdin /nonexistent-moat -- /bin/true
check_bad "relative --cwd" "filesystem.cwd: .relative. is not a clean absolute path" run --cwd relative -- /bin/true
check_bad "bad --env" "env: '1BAD' is not a variable name" run --env 1BAD=x -- /bin/true
check_bad "unknown command" "unknown command 'frob'" frob
check_bad "a --cwd that does not exist inside, and why" "working directory /nope: No such file or directory" run --cwd /nope -- /bin/true
# A value is echoed with its control characters escaped, so the error stays
# one line and cannot drive the terminal.
check_bad "a newline in a size" "'5\\\\n' is not a size" run --mem $'5\n' -- /bin/true
check_bad "an escape in a duration" "'1\\\\x1b\\[31m' is not a duration" run --time $'1\e[31m' -- /bin/true
check_bad "a newline in a policy path" "policy /nope\\\\nx" run --policy $'/nope\nx' -- /bin/true
check_bad "a C1 control in a command name" "unknown command 'a\\\\xc2\\\\x9bb'" $'a\xc2\x9bb'
t_nomatch "no raw escape byte reaches stderr" $'\e' "$(mrun run --time $'1\e[31m' -- /bin/true; printf '%s' "$ERR")"
