"""``%agent serve``: the kernel's tools served over MCP — the cell side and the IPython-free HTTP
server.
"""
