# moat eval harness for C and C++ (MultiPL-E's layout), run by Python.
#
# Runs inside the sandbox, started as `python3 -I -c <this file> c|cpp`, and
# reads its request on stdin like harness/eval.py:
#   NONCE '\n' ENTRY_POINT '\n' LEN '\n' CODE(LEN bytes) TEST
# CODE (prompt and completion) and TEST (which holds main and its asserts)
# are one translation unit, compiled in the sandbox's /tmp and linked with
# a wrapper of the harness's around main (-Wl,--wrap=main) that calls it
# and, once it has returned 0, writes "ok" on a pipe to this driver before
# _exit(0). The driver reports to moat, on a private
# copy of stdout,
#   '\n' moat-eval:NONCE pass | fail DETAIL | error DETAIL | compile DETAIL '\n'
# pass only when the program said "ok" and exited 0; an assert (SIGABRT with
# "Assertion" on stderr) is a failure, anything else an error.
#
# The nonce never enters the sample's process: it stays in this driver,
# which the sample's process cannot read (the driver is non-dumpable) nor
# signal into saying anything. What C gives the sample is its own process:
# exit(0) or _exit(0) before the tests, atexit handlers, a signal: none of
# these writes "ok", so none passes. A sample written against this harness
# could write "ok" on the pipe itself (docs/eval.md).
import os
import signal
import subprocess
import sys

# The program's own main stays main (so that falling off its end returns 0,
# as the language says); the linker sends the C runtime's call to this
# wrapper instead (--wrap=main), which calls the real one.
WRAPPER = r"""
#include <unistd.h>
#ifdef __cplusplus
extern "C" {
#endif
int __real_main(int argc, char **argv, char **envp);
int __wrap_main(int argc, char **argv, char **envp)
{
	int r = __real_main(argc, argv, envp);
	if (r == 0 && write(MOAT_EVAL_FD, "ok", 2) != 2)
		_exit(125);
	_exit(r);
}
#ifdef __cplusplus
}
#endif
"""


def main():
    lang = sys.argv[1]
    data = sys.stdin.buffer.read()
    null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(null, 0)
    os.close(null)
    nonce, _entry, n, rest = data.split(b"\n", 3)
    n = int(n)
    out = os.dup(1)
    tag = b"\nmoat-eval:" + nonce + b" "

    def report(word, detail=""):
        line = tag + word + (b" " + detail.replace("\n", " ")[:200].encode("utf-8", "replace") if detail else b"") + b"\n"
        while line:
            line = line[os.write(out, line):]
        os._exit(0)

    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        report(b"error", "moat eval: the harness could not make itself non-dumpable")

    ext, cc = (".cpp", "/usr/bin/g++") if lang == "cpp" else (".c", "/usr/bin/gcc")
    work = "/tmp/moat-eval"
    os.mkdir(work, 0o700)
    src = os.path.join(work, "sample" + ext)
    wrap = os.path.join(work, "wrapper" + ext)
    exe = os.path.join(work, "sample")
    with open(src, "wb") as f:
        f.write(rest[:n])
        f.write(rest[n:])
    r, w = os.pipe()
    with open(wrap, "w") as f:
        f.write("#define MOAT_EVAL_FD %d\n" % w + WRAPPER)
    cmd = [cc, "-O1", "-w", "-o", exe, "-x", "c++" if lang == "cpp" else "c", wrap, src, "-Wl,--wrap=main"]
    if lang == "cpp":
        cmd[1:1] = ["-std=c++17"]
    else:
        cmd.append("-lm")
    c = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if c.returncode != 0:
        errs = [l for l in c.stderr.decode("utf-8", "replace").splitlines() if "error" in l]
        report(b"compile", (errs[0] if errs else "exit %d" % c.returncode).replace(work + "/", ""))
    # stderr to a file, read once the program ended: a pipe it filled
    # would stall it.
    errpath = os.path.join(work, "stderr")
    with open(errpath, "wb") as ef:
        p = subprocess.Popen([exe], stdin=subprocess.DEVNULL, stdout=None, stderr=ef, pass_fds=(w,), cwd=work)
    os.close(w)
    said = b""
    while len(said) < 16:
        chunk = os.read(r, 16)
        if not chunk:
            break
        said += chunk
    p.wait()
    with open(errpath, "rb") as ef:
        ef.seek(max(0, os.fstat(ef.fileno()).st_size - (1 << 16)))
        err = ef.read()
    if p.returncode == 0 and said == b"ok":
        report(b"pass")
    text = err.decode("utf-8", "replace")
    if p.returncode == -signal.SIGABRT and "Assertion" in text:
        line = [l for l in text.splitlines() if "Assertion" in l]
        report(b"fail", "AssertionError: " + line[-1].split(": ", 1)[-1] if line else "AssertionError")
    if p.returncode < 0:
        report(b"error", "killed by signal %d" % -p.returncode)
    report(b"error", "exited with code %d before the tests finished" % p.returncode)


main()
