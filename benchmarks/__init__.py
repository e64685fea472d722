"""Side-by-side benchmarks: each figure measures ours and the alternative in the same run.

Absolute times on a shared machine are noise; the ratio of two things measured back to back on the
same machine is not. ``python -m benchmarks`` runs every figure and writes ``RESULTS.md``;
``python -m benchmarks --quick`` runs them at tiny sizes so CI notices when the suite rots.
"""
