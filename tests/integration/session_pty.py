#!/usr/bin/env python3
"""`moat session exec` on a terminal (session_exec.sh): this script plays
the user's terminal with a pseudo-terminal of its own and checks what a
person at it would see. Prints one line per check, "ok NAME" or
"fail NAME: why"; session_exec.sh turns them into TAP.

    session_pty.py MOAT SESSION
"""
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

MOAT, SESSION = sys.argv[1], sys.argv[2]
# Generous: the machine may be loaded; a check that passes returns at once.
WAIT = 60


def report(ok, name, why=""):
    print(("ok " if ok else "fail ") + name + ("" if ok else ": " + why), flush=True)


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Term:
    """A terminal: moat gets its slave as stdin, stdout and stderr; we
    type into and read from the master."""

    def __init__(self, args, rows=30, cols=100, front=("session", "exec")):
        self.master, self.slave = os.openpty()
        set_size(self.slave, rows, cols)
        self.saved = termios.tcgetattr(self.slave)
        self.p = subprocess.Popen([MOAT] + list(front) + args, stdin=self.slave, stdout=self.slave,
                                  stderr=self.slave, close_fds=True)
        self.seen = b""

    def until(self, want):
        """Reads until want was seen; True when it was."""
        end = time.monotonic() + WAIT
        while want.encode() not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    b = os.read(self.master, 4096)
                except OSError:
                    return want.encode() in self.seen
                if not b:
                    break
                self.seen += b
        return want.encode() in self.seen

    def finish(self):
        try:
            rc = self.p.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        # What is left on the terminal, for the checks on what came last.
        while select.select([self.master], [], [], 0.2)[0]:
            try:
                b = os.read(self.master, 4096)
            except OSError:
                break
            if not b:
                break
            self.seen += b
        return rc

    def close(self):
        os.close(self.master)
        os.close(self.slave)


# -t: the command's terminal takes the caller's window size, and a change of
# it (SIGWINCH to exec) reaches the command; SIGTERM to exec is sent on.
t = Term(["-t", SESSION, "--", "sh", "-c",
          "last=; while :; do s=$(stty size); [ \"$s\" != \"$last\" ] && echo \"size:$s\" && last=$s; sleep 0.1; done"])
report(t.until("size:30 100"), "-t: the command's terminal takes the caller's window size (30 100)",
       repr(t.seen[-200:]))
set_size(t.slave, 40, 120)
t.p.send_signal(signal.SIGWINCH)
report(t.until("size:40 120"), "-t: a new window size (SIGWINCH to exec) reaches the command", repr(t.seen[-200:]))
t.p.send_signal(signal.SIGTERM)
rc = t.finish()
report(rc == 128 + signal.SIGTERM, "-t: SIGTERM to exec ends the command (128+15)", "exit %d" % rc)
t.close()

# -t: a command that reads its window size first thing sees the caller's
# (carried in the spawn and set before the command starts, not after), for
# exec and for moat run -t alike, every time.
for front, args in ((("session", "exec"), ["-t", SESSION, "--", "stty", "size"]),
                    (("run",), ["-t", "--", "stty", "size"])):
    bad = []
    for i in range(20):
        t = Term(args, rows=37 + i, cols=91, front=front)
        rc = t.finish()
        want = "%d 91" % (37 + i)
        if rc != 0 or want.encode() not in t.seen:
            bad.append("run %d: exit %d, %r" % (i, rc, t.seen[-80:]))
        t.close()
    report(not bad, "-t: stty size as the command's first act prints the caller's size, 20 of 20 (%s)" %
           " ".join(front), "; ".join(bad[:3]))

# -t: what is typed reaches the command, its terminal is the command's own,
# its status is exec's, and the caller's terminal is given back as it was.
t = Term(["-t", SESSION, "--", "sh", "-c", "test -t 0 && echo is-a-tty; echo ready; read line; echo \"got:$line\"; exit 5"])
ok = t.until("ready")
raw = termios.tcgetattr(t.slave)
report(ok and not (raw[3] & termios.ICANON), "-t: the caller's terminal is raw while the command runs",
       repr(t.seen[-200:]))
os.write(t.master, b"hello\r")
report(t.until("got:hello"), "-t: what the caller types reaches the command", repr(t.seen[-200:]))
report(b"is-a-tty" in t.seen, "-t: the command's stdin is a terminal", repr(t.seen[-200:]))
rc = t.finish()
report(rc == 5, "-t: exec exits with the command's status", "exit %d" % rc)
report(termios.tcgetattr(t.slave) == t.saved, "-t: the caller's terminal is given back as it was")
t.close()

# -i from a terminal without -t: the input comes through a pipe, never the
# terminal itself (TIOCSTI).
t = Term(["-i", SESSION, "--", "sh", "-c", "test -t 0 && echo is-a-tty || echo not-a-tty; echo ready; read l; echo \"in:$l\""])
ok = t.until("ready")
os.write(t.master, b"abc\n")
report(ok and t.until("in:abc"), "-i on a terminal: the typed line reaches the command", repr(t.seen[-200:]))
report(b"not-a-tty" in t.seen, "-i on a terminal: the command's stdin is a pipe, not the caller's terminal",
       repr(t.seen[-200:]))
rc = t.finish()
report(rc == 0, "-i on a terminal: exit 0", "exit %d" % rc)
t.close()

# Neither -t nor -i: the command's stdin is /dev/null, even on a terminal.
t = Term([SESSION, "--", "sh", "-c", "cat; echo eof-at-once"])
report(t.until("eof-at-once"), "no -i: the command reads end of file at once", repr(t.seen[-200:]))
rc = t.finish()
report(rc == 0, "no -i: exit 0", "exit %d" % rc)
t.close()
