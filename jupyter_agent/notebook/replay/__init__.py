"""Reproducible agent cells: a finished ``%%agent`` cell's turn, kept signed in the notebook and
replayed on a re-run without a model request (SPEC "Reproducible agent cells")."""
