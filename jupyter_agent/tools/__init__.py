"""Tools: the contract, the registry, the workspace resolver and the built-in tools."""
