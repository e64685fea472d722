"""The one mark that stands where text was cut, so the model learns a single wording.

Tool results, command output, search hits, fetched pages, MCP resources, tracebacks and object
summaries are all capped; each cap leaves ``[… 1,234 characters cut …]`` (or ``[… 1,234 of 5,678
characters cut …]`` where the whole size is worth knowing) where the text was taken out. Seven
wordings ("omitted", "more chars", "truncated", "Content cut at", …) used to teach the model seven
things. Standard library only: ``pysearch`` loads it beside itself when it runs as a script.
"""

from __future__ import annotations


def cut_mark(dropped: int, total: int | None = None) -> str:
    """The mark for ``dropped`` characters cut (of ``total``, when given)."""
    of = f" of {total:,}" if total is not None else ""
    return f"[… {dropped:,}{of} characters cut …]"


def cut_end(text: str, limit: int, separator: str = " ") -> str:
    """``text`` itself if it fits in ``limit`` characters, else its head, ``separator`` and the
    mark, all within ``limit`` (the mark alone, clipped, where ``limit`` is smaller than it)."""
    if len(text) <= limit:
        return text
    widest = separator + cut_mark(len(text))  # the count never exceeds the whole length
    keep = max(limit - len(widest), 0)
    if not keep:
        return cut_mark(len(text))[:limit]
    return text[:keep] + separator + cut_mark(len(text) - keep)
