#!/bin/bash
# The values never reach what moat passes on or writes down: the command's
# stdout and stderr (also a value cut across two writes, and its base64,
# base64url and percent-encoded forms), the recording (with or without an
# audit log) and the result. The command gets the value the one way the
# test leaves open: a file bound read-only, holding the same value as the
# secret's source. The same run without the secret shows the value, so the
# checks can fail; the byte counts stay those of what the command wrote.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

VALUE="sk-$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40)))')/+:x"
printf '%s\n' "$VALUE" >model.key
printf '%s' "$VALUE" >leak.txt
chmod 600 model.key
chmod 644 leak.txt
# The forms, unpadded: a padded form holds them.
FORMS=$(python3 - "$VALUE" <<'PY'
import base64, sys, urllib.parse
v = sys.argv[1].encode()
print(base64.b64encode(v).decode().rstrip("="))
print(base64.urlsafe_b64encode(v).decode().rstrip("="))
print(urllib.parse.quote(v, safe="-._~"))
PY
)
B64=$(printf '%s\n' "$FORMS" | sed -n 1p)
B64URL=$(printf '%s\n' "$FORMS" | sed -n 2p)
PCT=$(printf '%s\n' "$FORMS" | sed -n 3p)
# grep -F patterns, one a line: the value and each form.
printf '%s\n%s\n%s\n%s\n' "$VALUE" "$B64" "$B64URL" "$PCT" >needles

# The command prints the value whole, cut in two writes with a pause
# between (two reads for moat), and in each form, on stdout and stderr.
cat >leak.py <<'PY'
import base64, os, sys, time, urllib.parse
v = open("/v", "rb").read()
for fd in (1, 2):
    os.write(fd, b"whole " + v + b"\n")
    os.write(fd, b"cut " + v[:17])
    time.sleep(0.3)
    os.write(fd, v[17:] + b"\n")
    os.write(fd, base64.b64encode(v) + b"\n" + base64.urlsafe_b64encode(v) + b"\n")
    os.write(fd, urllib.parse.quote(v, safe="-._~").encode() + b"\n")
    os.write(fd, b"end " + v[:10] + b"\n")
PY
RUN=(--ro "$MOAT_TDIR/leak.txt:/v" --ro "$MOAT_TDIR/leak.py:/leak.py")
SECRET=(--secret "MODEL=file:$MOAT_TDIR/model.key@api.example.com")

# The control: no secret, the value comes out as the command printed it.
"$MOAT" run "${RUN[@]}" -- python3 /leak.py >ctl.out 2>ctl.err && RC=0 || RC=$?
t_eq "control run: exit 0" 0 "$RC"
t_eq "control run: stdout shows the value and each form (the checks can fail)" 5 "$(grep -cFf needles ctl.out)"
t_eq "control run: stderr too" 5 "$(grep -cFf needles ctl.err)"
CTL_BYTES=$(wc -c <ctl.out)

# With the secret: no value nor form in stdout, stderr, recording, result.
"$MOAT" run "${SECRET[@]}" "${RUN[@]}" --record rec.cast --result result.json -- python3 /leak.py >red.out 2>red.err \
	&& RC=0 || RC=$?
t_eq "redacted run: exit 0" 0 "$RC"
t_eq "redacted run: no value or form in stdout, stderr, recording, result" "" \
	"$(grep -lFf needles red.out red.err rec.cast result.json)"
t_eq "redacted run: stdout marks each (whole, cut across writes, three forms)" 5 "$(grep -c '\[REDACTED:MODEL\]' red.out)"
t_eq "redacted run: stderr marks each" 5 "$(grep -c '\[REDACTED:MODEL\]' red.err)"
t_match "redacted run: the rest of the output is intact" "^end ${VALUE:0:10}\$" "$(tail -1 red.out)"
t_match "redacted run: the recording marks the value" 'REDACTED:MODEL' "$(cat rec.cast)"
t_eq "redacted run: stdout_bytes counts what the command wrote" "$CTL_BYTES" "$(json result.json 'j["stdout_bytes"]')"

# With an audit log as well (the recording shares its redactor).
"$MOAT" run "${SECRET[@]}" "${RUN[@]}" --audit audit.jsonl --record rec2.cast -- python3 /leak.py >/dev/null 2>&1 \
	&& RC=0 || RC=$?
t_eq "with an audit log: exit 0" 0 "$RC"
t_eq "with an audit log: no value in the log or the recording" "" "$(grep -lFf needles audit.jsonl rec2.cast)"

# The output cap counts what the command wrote, not the markers.
"$MOAT" run "${SECRET[@]}" "${RUN[@]}" --output 20 --result cap.json -- python3 /leak.py >cap.out 2>&1 \
	&& RC=0 || RC=$?
t_eq "capped: stdout and stderr count 20 bytes" 20 "$(json cap.json 'j["stdout_bytes"] + j["stderr_bytes"]')"
t_eq "capped: no value" "" "$(grep -lFf needles cap.out)"

# The result's error text: a command that cannot be found, named by a path
# that holds the value (without the secret, the result quotes it).
"$MOAT" run --result errctl.json -- "/nonexistent/$VALUE" >/dev/null 2>&1
t_eq "missing command, control: the result quotes the path" "errctl.json" "$(grep -lF "$VALUE" errctl.json)"
"$MOAT" run "${SECRET[@]}" --result err.json -- "/nonexistent/$VALUE" >err.out 2>&1 && RC=0 || RC=$?
t_eq "missing command: 127" 127 "$RC"
t_match "missing command: the result says so" "command not found" "$(json err.json 'j["error"]')"
t_eq "missing command: no value in the result or the message" "" "$(grep -lFf needles err.json err.out)"
