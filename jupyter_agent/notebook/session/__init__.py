"""The notebook's session without IPython: its settings, managed settings, the conversation file,
prompt variables, project instructions and prompt redaction.
"""
