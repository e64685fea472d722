"""Co-authoring with the JupyterLab extension: the link to the notebook, the cell tools, running a
cell, the review of an edit or run in the page, the review diff and whose turn ``%agent undo`` takes
back.
"""
