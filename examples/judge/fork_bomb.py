# Hostile submission: forks without end. The pids limit must stop it, and the
# verdict must not be a pass.
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
