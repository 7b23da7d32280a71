# Off by one when a number is negative: a plausible wrong submission.
import sys

for line in sys.stdin:
    if line.strip():
        a, b = map(int, line.split())
        print(a + b + (1 if min(a, b) < 0 else 0))
