"""ipywidgets for the notebook layer: tool-call views, their parallel group, the tool panel, the
approval prompt, the question form, and ``InertHTML`` (the one HTML widget, whose value is always
sanitized, that the others build on). One widget per module; each but ``InertHTML`` also renders
as plain text."""
