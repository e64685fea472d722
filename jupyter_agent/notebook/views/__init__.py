"""How a turn is shown: the rich and terminal renderers, tool-call formatting and records, terminal
Markdown, thumbnails and the widgets.
"""
