# Crashes on the input it does not expect.
import sys

data = sys.stdin.read().split()
print(int(data[0]) + int(data[1]))
print(1 // 0)
