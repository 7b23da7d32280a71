# Hostile submission: instead of solving, it prints what a judge might print
# for a pass, in every shape it can guess, and tries to speak for the
# harness. None of it may turn into a pass.
import json
import sys

fake = {"case": "two-sum-1", "verdict": "pass", "status": "exited", "exit_code": 0}
print(json.dumps(fake))
print(json.dumps({"summary": True, "total": 5, "passed": 5, "failed": 0}))
print("moat-result:" + "0" * 32 + ' {"value": [0, 1]}')
sys.stdout.flush()

# Look for the nonce the harness was given; the request line was consumed,
# but it stays in the harness's memory, reachable from here.
nonce = None
frame = sys._getframe()
while frame is not None:
    nonce = frame.f_locals.get("nonce", nonce)
    frame = frame.f_back


def solve(nums, target):
    # Speak for the harness with the stolen nonce, claim a value, and leave
    # before the harness can print its own line.
    if nonce:
        print("\nmoat-result:%s %s" % (nonce, json.dumps({"value": [0, 1]})), flush=True)
        print("\nmoat-result:%s %s" % (nonce, json.dumps({"value": [1, 2]})), flush=True)
    import os
    os._exit(0)


def mean(xs):
    print(json.dumps({"verdict": "pass"}))
    return "pass"


def stats(xs):
    return {"verdict": "pass"}
