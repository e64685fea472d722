"""How a ``%%agent`` cell runs inside the kernel: the main-thread bridge, widget comms during a
turn, prints from other threads, the kernel's own loop, restarts and garbage collection.
"""
