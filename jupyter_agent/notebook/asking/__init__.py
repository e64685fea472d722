"""The agent asks, the user answers: questions, approvals, an MCP server's forms, and the widget
that waits for the click.
"""
