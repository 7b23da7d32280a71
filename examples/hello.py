# A sample untrusted program: it prints, then tries things a sandbox must stop.
import os
import socket

print("hello from inside moat, running as uid", os.getuid())

for path in ("/etc/shadow", os.path.expanduser("~root"), "/home"):
    try:
        os.listdir(path) if os.path.isdir(path) else open(path).read()
        print(f"  read {path}: ALLOWED")
    except OSError as e:
        print(f"  read {path}: blocked ({e.strerror})")

try:
    open("/usr/bin/evil", "w")
    print("  write /usr/bin/evil: ALLOWED")
except OSError as e:
    print(f"  write /usr/bin/evil: blocked ({e.strerror})")

try:
    socket.create_connection(("1.1.1.1", 443), timeout=2)
    print("  connect 1.1.1.1:443: ALLOWED")
except OSError as e:
    print(f"  connect 1.1.1.1:443: blocked ({e.strerror})")

with open("/out/answer.txt", "w") as f:
    f.write("42\n")
print("  wrote /out/answer.txt")
