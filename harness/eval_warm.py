# moat eval's warm interpreter for Python (docs/eval.md, "Throughput").
#
# Started once per worker as the only command of a sandbox built like a
# sample's (`python3 -I -S -c <this file>`, confined by the run's profile),
# it imports what the harness needs and then, for each sample, forks a child
# that runs the harness (eval.py, sent first on stdin) exactly as a cold
# sandbox would run it. This process never runs a sample's code.
#
# On stdin (from moat, a pipe):   H LEN '\n' HARNESS     once, first
#                                 P K '\n'               once, after ready:
#                                                        keep K children ahead
#                                 R LEN '\n' REQUEST     a sample (eval.py's stdin)
# On stdout (to moat, a pipe):    ready '\n'             once, then
#                                 forked PID '\n'        a child waits (K, then
#                                                        one after each exit)
#                                 exit STATUS '\n'       a child ended
#                                 dirty '\n'             a sample's files could not be removed
# stderr is the samples' stdout and stderr; this process writes nothing there.
#
# Each child is forked ahead of its sample (K of them wait at once, handed
# their requests in the order they were forked) and waits for its request;
# moat moves it into a cgroup of its own (its limits and accounting) before
# it sends the request, K children at a time: on cgroup v1 each move waits
# for an RCU grace period, which one move after another within the same
# period shares. A waiting child keeps no descriptor of another child's and
# runs nothing of a sample's. Before any sample code runs, the child:
#  - leads a new session; keeps only its request (fd 0, a pipe) and the
#    output pipe (fds 1 and 2): this process's control pipes are closed;
#  - adds a Landlock layer of its own: writes only beneath /tmp and to the
#    sandbox's devices, and, scoped, no signal to and no abstract socket of
#    any process outside it (this process, the sandbox's init);
#  - adds a seccomp filter that refuses System V IPC and POSIX message
#    queues, the only state of the sandbox a process could leave behind
#    that neither its end nor the removal of /tmp's files takes away.
# When it has ended and moat has killed whatever it left in its cgroup, this
# process removes everything in /tmp before it hands the next child its
# request.


def _moat_warm():
    import os
    import sys
    import site

    # Only ever in its sandbox: it empties /tmp before each sample, which is
    # the sandbox's own there and the host's anywhere else. In its sandbox
    # its parent is the sandbox's init (pid 1 of a new pid namespace), and
    # /tmp is a fresh tmpfs holding nothing yet.
    if os.getppid() != 1 or os.listdir("/tmp"):
        os.write(2, b"eval_warm.py: not in a fresh moat sandbox; refusing to empty /tmp\n")
        os._exit(4)

    sys.path.extend(p for p in site.getsitepackages() if p not in sys.path and os.path.isdir(p))
    import ctypes
    import io
    import struct
    import types

    # What samples import most, so that their children need not: the
    # state is that of a fresh import, since no sample ever ran here.
    import collections, functools, heapq, itertools, math, re, string, typing  # noqa: F401,E401

    del site
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    if prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0
        os._exit(3)
    buf = bytearray()

    def fill():
        b = os.read(0, 1 << 16)
        if not b:
            os._exit(0)
        buf.extend(b)

    def line():
        while True:
            i = buf.find(b"\n")
            if i >= 0:
                out = bytes(buf[:i])
                del buf[: i + 1]
                return out
            if len(buf) > 64:
                os._exit(4)
            fill()

    def take(n):
        while len(buf) < n:
            fill()
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def say(s):
        os.write(1, s)

    head = line()
    if not head.startswith(b"H "):
        os._exit(4)
    harness = compile(take(int(head[2:])), "<string>", "exec")

    # The child's confinement, prepared once.
    machine = os.uname().machine
    if machine == "x86_64":
        arch, ipc_nrs = 0xC000003E, (29, 64, 68, 240, 241)  # shmget semget msgget mq_open mq_unlink
    elif machine == "aarch64":
        arch, ipc_nrs = 0xC00000B7, (194, 190, 186, 180, 181)
    else:
        os._exit(5)
    EPERM = 0x00050000 | 1
    ins = [(0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, EPERM), (0x20, 0, 0, 0),
           (0x35, 0, 1, 0x40000000), (0x06, 0, 0, EPERM)]
    for k, nr in enumerate(ipc_nrs):
        ins.append((0x15, 0, 1, nr))
        ins.append((0x06, 0, 0, EPERM))
    ins.append((0x06, 0, 0, 0x7FFF0000))
    filt = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *i) for i in ins))
    prog = ctypes.create_string_buffer(struct.pack("@HP", len(ins), ctypes.addressof(filt)))
    abi = libc.syscall(444, None, 0, 1)
    if abi < 6:
        os._exit(6)  # no signal scoping: moat runs every sample cold
    # Every right that writes, removes or makes; reads are the outer layer's.
    write_fs = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) \
        | (1 << 11) | (1 << 12) | (1 << 13) | (1 << 14)
    ruleset = struct.pack("=QQQ", write_fs, 0, 3)  # scoped: abstract unix sockets, signals
    rules = [("/tmp", write_fs)] + [("/dev/" + d, (1 << 1) | (1 << 14))
                                     for d in ("null", "zero", "full", "random", "urandom")]
    syscall, fork, waitpid, close, dup2, closerange = libc.syscall, os.fork, os.waitpid, os.close, os.dup2, os.closerange

    # The Landlock ruleset is made once, here: each child only restricts
    # itself with it (a ruleset may be enforced any number of times), then
    # closes its copy with every other descriptor before the sample runs.
    rs = syscall(444, ruleset, len(ruleset), 0)  # O_CLOEXEC, as every ruleset
    if rs < 0:
        os._exit(6)
    for path, access in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        ok = syscall(445, rs, 1, struct.pack("=Qi", access, fd), 0) == 0
        close(fd)
        if not ok:
            os._exit(6)

    def confine():
        if syscall(446, rs, 0) != 0:
            return "landlock restrict"
        if libc.prctl(22, 2, prog, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
            return "seccomp"
        return None

    def wipe(path):
        ok = True
        try:
            entries = list(os.scandir(path))
        except OSError:
            return False
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    os.chmod(e.path, 0o700)
                    ok = wipe(e.path) and ok
                    os.rmdir(e.path)
                else:
                    os.unlink(e.path)
            except OSError:
                ok = False
        return ok

    # A child's sys.stdin, stdout and stderr, made here once: each child
    # gets its own copy of these objects, which this process never uses.
    # They name descriptors only, which in the child are what they are
    # here: pipes (its request; the output pipe, as stdout and stderr).
    streams = (io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False))),
               io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False))),
               io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                errors="backslashreplace", line_buffering=True))

    def prefork():
        # The next sample's child, forked ahead so that moat can move it
        # into its cgroup while the sample before is accounted: it waits
        # for its request, which is the go.
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        pid = fork()
        if pid == 0:
            try:
                # The other waiting children's request pipes: a copy kept
                # here would hold their requests open.
                closerange(3, rs)
                closerange(rs + 1, go_r)
                closerange(go_r + 1, 1 << 20)
                if os.read(go_r, 1) != b"g":
                    os._exit(125)
                os.setsid()
                # The rest of the pipe is the request, read whole by the
                # harness before any sample code runs.
                dup2(go_r, 0)
                dup2(2, 1)
                why = confine()
                if why:
                    os.write(2, b"moat eval: warm sample: " + why.encode() + b"\n")
                    os._exit(125)
                closerange(3, 1 << 20)
                sys.stdin, sys.stdout, sys.stderr = streams
                main = types.ModuleType("__main__")
                sys.modules["__main__"] = main
                # The harness makes itself non-dumpable with this
                # process's prctl rather than load ctypes and the C library
                # again (a copy-on-write fault for every page it touches).
                main.__dict__["__moat_warm_prctl__"] = prctl
                exec(harness, main.__dict__)
                os._exit(0)
            except SystemExit as e:
                os._exit(e.code if isinstance(e.code, int) else 1)
            except BaseException:
                os._exit(1)
        close(go_r)
        return pid, go_w

    # What exists now is never collected in a child: its collections
    # then touch none of these pages, which stay shared with this process.
    import gc

    gc.freeze()
    # moat takes note of this sandbox's own processes (the init and this
    # one) before any child exists.
    say(b"ready\n")
    head = line()
    if not head.startswith(b"P ") or not 1 <= int(head[2:]) <= 16:
        os._exit(4)
    waiting = []
    for _ in range(int(head[2:])):
        waiting.append(prefork())
        say(b"forked %d\n" % waiting[-1][0])
    while True:
        head = line()
        if not head.startswith(b"R "):
            os._exit(4)
        req = take(int(head[2:]))
        # The sample before is gone with everything it started (moat
        # emptied its cgroup before sending this request): what it left
        # in /tmp goes now.
        if not wipe("/tmp"):
            say(b"dirty\n")
            os._exit(7)
        pid, go_w = waiting.pop(0)
        try:
            view = memoryview(b"g" + req)
            del req
            while view:
                view = view[os.write(go_w, view):]
        except OSError:
            pass  # the child died (moat killed it): its status says how
        del view
        close(go_w)
        while True:
            try:
                _, status = waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        # The status first: moat accounts the sample while the next
        # child is forked.
        say(b"exit %d\n" % status)
        waiting.append(prefork())
        say(b"forked %d\n" % waiting[-1][0])

_moat_warm()
