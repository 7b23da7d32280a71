# Hostile submission: allocates memory without end. The memory limit must
# stop it, and the verdict must not be a pass.
blocks = []
while True:
    blocks.append(bytearray(16 << 20))
