"""The agent's tools on the kernel: the cell recorder and history, variables and their summaries,
``run_python`` and its figures, proposed cells.
"""
