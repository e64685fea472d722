"""ipywidgets for the notebook layer: tool-call views, their parallel group, the tool panel and
the approval prompt. One widget per module; each also renders as plain text."""
