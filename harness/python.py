# moat judge harness for Python.
#
# Runs inside the sandbox: reads one request line on stdin,
#   {"nonce": "...", "function": "solve", "args": [...]}
# loads the submission given as argv[1] as a module named "solution", calls
# the function with the arguments and prints one line on stdout,
#   moat-result:NONCE {"value": V}      or      moat-result:NONCE {"error": "..."}
# then exits at once.
#
# This file is not trusted and needs no secret: the submission runs in the
# same interpreter and may read or patch anything here. The verdict comes
# from moat, which compares V with the expected value; that value never
# enters the sandbox, so a submission that tampers with the harness can only
# report a value of its own choosing, which it could have returned anyway.
import os
import sys

# Taken before the submission runs, so that rebinding the names it can see
# does not change how the reply is written.
_write = os.write
_exit = os._exit
_dup = os.dup


def main():
    import json

    dumps = json.dumps
    req = json.loads(sys.stdin.buffer.readline())
    nonce, fn, args = req["nonce"], req["function"], req["args"]
    # A private copy of stdout: the submission may close or redirect fd 1.
    out = _dup(1)

    def reply(obj):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        try:
            body = dumps(obj, allow_nan=False)
        except (TypeError, ValueError, OverflowError) as e:
            body = dumps({"error": "the result is not JSON: %s" % e})
        data = ("\nmoat-result:%s %s\n" % (nonce, body)).encode()
        while data:
            n = _write(out, data)
            data = data[n:]
        _exit(0)

    try:
        import importlib.util

        path = sys.argv[1]
        spec = importlib.util.spec_from_file_location("solution", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["solution"] = mod
        spec.loader.exec_module(mod)
        f = getattr(mod, fn, None)
        if not callable(f):
            reply({"error": "the submission defines no function %s" % fn})
        value = f(*args)
        import inspect

        if inspect.isawaitable(value):
            import asyncio

            async def wait(v):
                return await v

            value = asyncio.run(wait(value))
    except BaseException as e:  # SystemExit and KeyboardInterrupt included
        import traceback

        traceback.print_exc()
        reply({"error": "%s: %s" % (type(e).__name__, e)})
    reply({"value": value})


main()
