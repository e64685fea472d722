"""The file tools: read, write and edit files in the workspace, read a notebook file compactly,
save the session's context to a file.
"""
