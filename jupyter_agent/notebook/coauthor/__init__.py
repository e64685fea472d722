"""Co-authoring with the JupyterLab extension: the link to the notebook, the review diff and whose
turn ``%agent undo`` takes back.
"""
