"""``search_files`` / ``search_text``: ripgrep when it is there, else the pure-Python search
(``pysearch.py``, which also runs as a standalone script in a child process).
"""
