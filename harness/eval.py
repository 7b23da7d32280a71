# moat eval harness for Python.
#
# Runs inside the sandbox, started as `python3 -I -S -c <this file>`, and reads
# its request on stdin:
#   NONCE '\n' ENTRY_POINT '\n' LEN '\n' CODE(LEN bytes) TEST
# CODE is the prompt and the sample's completion, TEST the problem's test.
# Each is compiled and run on its own (so that a completion cannot swallow
# the test into a string or a comment), in one namespace; then, when
# the test defined check (HumanEval), check(ENTRY_POINT); a test without
# check ran its asserts itself (MBPP). Only once check has returned
# does the harness write, on a private copy of stdout,
#   '\n' moat-eval:NONCE pass '\n'
# and end the process at once. A failure is reported the same way with
# "fail" (an AssertionError) or "error" (anything else) and a description.
#
# The sample runs in this interpreter and could in principle reach anything
# here; what keeps it from printing the report itself is that it never
# learns the nonce:
#  - the request is read whole and stdin is replaced by /dev/null before any
#    sample code runs;
#  - the process is made non-dumpable, so that no other process of the
#    sandbox (a child the sample spawns) may read its memory through
#    /proc/PID/mem;
#  - an audit hook (PEP 578), installed before the sample runs and
#    impossible to remove, refuses what reaches the harness's frames or
#    objects from Python: frame and traceback frame attributes,
#    sys._getframe, tracing and profiling hooks, the gc's object lists,
#    ctypes, and opening anything under /proc (its own /proc/self/mem).
# The harness takes every function it uses after the sample runs before the
# sample runs, so that patching builtins or os changes nothing here; it
# ends with os._exit, so that atexit handlers and lingering threads of the
# sample get no say after the report. A sample that exits first (os._exit,
# sys.exit, a SystemExit raised inside check, a signal) leaves no report,
# and moat counts that as a failure.


def _moat_eval():
    import os
    import sys

    # Started with -S: the site folders go on sys.path, as they would, but
    # no .pth file of the host runs in every sample (on some hosts they
    # cost more than the rest of the start-up together).
    # Forked from moat's warm interpreter (harness/eval_warm.py), which set
    # sys.path so already and hands over its prctl: no sample code has run
    # yet, so these names are the interpreter's.
    prctl = globals().pop("__moat_warm_prctl__", None)
    if prctl is None:
        import site

        sys.path.extend(p for p in site.getsitepackages() if p not in sys.path and os.path.isdir(p))
        del site

    write, exit_, dup, close = os.write, os._exit, os.dup, os.close
    realpath, isinstance_, str_, type_ = os.path.realpath, isinstance, str, type
    exec_, dict_get, bytes_ = exec, dict.get, bytes
    base_exc, assertion = BaseException, AssertionError
    frozenset_ = frozenset

    data = sys.stdin.buffer.read()
    null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(null, 0)
    close(null)
    nonce, entry, n, rest = data.split(b"\n", 3)
    del data
    n = int(n)
    code, test = rest[:n], rest[n:]
    del rest
    entry = entry.decode()
    # A private copy of stdout: the sample may close or redirect fd 1.
    out = dup(1)
    tag = b"\nmoat-eval:" + nonce + b" "
    del nonce

    def report(word, detail=""):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except base_exc:
            pass
        try:
            line = tag + word + (b" " + detail.encode("utf-8", "replace") if detail else b"") + b"\n"
        except base_exc:
            line = tag + word + b"\n"
        while line:
            try:
                k = write(out, line)
            except base_exc:
                break
            line = line[k:]
        exit_(0)

    # No other process may read this one's memory (PR_SET_DUMPABLE = 4).
    if prctl is None:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        del ctypes
    if prctl(4, 0, 0, 0, 0) != 0:
        report(b"error", "moat eval: the harness could not make itself non-dumpable")
    del prctl

    blocked = frozenset_(
        (
            "sys._getframe",
            "sys._current_frames",
            "sys._current_exceptions",
            "sys.settrace",
            "sys.setprofile",
            "gc.get_objects",
            "gc.get_referrers",
            "gc.get_referents",
            "ctypes.dlopen",
            "ctypes.dlsym",
            "ctypes.dlsym/handle",
            "ctypes.cdata",
            "ctypes.cdata/buffer",
            "ctypes.addressof",
            "ctypes.string_at",
            "ctypes.wstring_at",
            "ctypes.call_function",
        )
    )
    frame_attrs = frozenset_(("tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals", "f_globals"))
    # Every name the hook uses is taken now: it runs while the sample's
    # code does, and builtins are the sample's to patch.
    len_, stat_, oserror = len, os.stat, OSError
    valueerror, runtimeerror, permissionerror = ValueError, RuntimeError, PermissionError
    # Anything on procfs, however named (a symlink, a relative path after
    # chdir), has /proc's device number.
    proc_dev = stat_("/proc").st_dev

    def hook(event, args):
        if event == "sys.addaudithook":
            # Only a RuntimeError keeps the new hook out (sys.addaudithook).
            raise runtimeerror("moat eval: audit hooks are the harness's")
        if event in blocked:
            # ValueError: what the standard library expects when a frame
            # cannot be had (collections.namedtuple, enum, typing).
            raise valueerror("moat eval: %s is not available to a sample" % event)
        if event == "object.__getattr__" and len_(args) > 1 and args[1] in frame_attrs:
            raise valueerror("moat eval: frames are not available to a sample")
        if event == "open" and len_(args) > 0 and isinstance_(args[0], (str_, bytes_)):
            try:
                dev = stat_(args[0]).st_dev
            except oserror:
                return
            if dev == proc_dev:
                raise permissionerror("moat eval: /proc is not available to a sample")

    # Compiled before the hook: compiling is the harness's, and a syntax
    # error is the sample's failure.
    try:
        code_obj = compile(code, "<completion>", "exec")
        test_obj = compile(test, "<test>", "exec")
    except base_exc as e:
        report(b"error", describe(e, type_, str_, base_exc))
    del code, test

    sys.addaudithook(hook)
    g = {}
    try:
        exec_(code_obj, g)
        exec_(test_obj, g)
        # dict's own method, taken above: g.get and builtins.dict are the
        # sample's to replace.
        check = dict_get(g, "check")
        if check is not None:
            # HumanEval's layout: the test defines check(candidate) and
            # leaves calling it to the harness; a problem without an
            # entry point to give it is refused rather than passed.
            if not entry:
                report(b"error", "the test defines check but the problem has no entry_point")
            check(g[entry])
        # Otherwise the test ran its asserts itself (MBPP, EvalPlus).
    except assertion as e:
        report(b"fail", describe(e, type_, str_, base_exc))
    except base_exc as e:
        report(b"error", describe(e, type_, str_, base_exc))
    report(b"pass")


def describe(e, type_, str_, base_exc):
    try:
        name = type_(e).__name__
        if not isinstance(name, str_):
            name = "exception"
    except base_exc:
        name = "exception"
    try:
        msg = str_(e)
    except base_exc:
        msg = ""
    if not isinstance(msg, str_):
        msg = ""
    return name + (": " + msg[:200] if msg else "")


_moat_eval()
