"""What keeps the tools inside the user's workspace and the user's machine safe: the workspace and
its path checks, hidden paths, code that runs later, atomic and private writes, the signed undo
journal, the sandbox, child processes, the network guard and egress approval.
"""
