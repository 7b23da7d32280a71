# Hostile submission: never ends. The time limit must stop it.
while True:
    pass
