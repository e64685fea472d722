"""The front end in the notebook: the magics and the extension's entry points, the cell turn,
argument types, plan mode, model choice, MCP commands and the live tools panel.
"""
