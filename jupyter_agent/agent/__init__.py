"""The agent loop: conversation, tool dispatch, events (no notebook code here)."""
