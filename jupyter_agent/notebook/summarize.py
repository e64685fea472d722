"""Short, budgeted descriptions of Python objects, for the model to read.

A kernel variable can be huge (a million-row DataFrame, a long list, a 50 MB string). The model
needs to know what it is, not every byte of it: this module describes an object by type, shape
and a small sample, and never returns more than the budget. It is shared by ``{{name}}`` prompt
injection and the ``inspect_variable`` / ``list_variables`` kernel tools.

A *lazy* frame — Dask, Spark, a Polars ``LazyFrame``, an Ibis expression, a DuckDB relation — is
a query, not data: its ``head()``, ``shape``, ``len`` and even ``repr`` (DuckDB, interactive Ibis)
run it, which can take minutes or read a warehouse. Such objects are recognised by the module of
their class (``lazy_library``), before any duck-typed probe touches them, and described from the
metadata their library keeps without running anything (``_CHEAP_ATTRIBUTES``).
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from ..tools.cut_mark import cut_end

#: Default size, in characters, of one summary.
DEFAULT_BUDGET = 4000


#: What the libraries of lazy frames call running the query, for the description.
_RUN_WITH = {
    "dask": ".compute()",
    "dask_expr": ".compute()",
    "pyspark": ".collect() / .toPandas()",
    "polars": ".collect()",
    "ibis": ".execute()",
    "duckdb": ".df() / .fetchall()",
}
#: Attributes each library answers from its plan or metadata, without running the query.
_CHEAP_ATTRIBUTES = {
    "dask": ("npartitions", "columns", "dtypes", "dtype"),
    "dask_expr": ("npartitions", "columns", "dtypes", "dtype"),
    "pyspark": ("dtypes",),
    "polars": (),  # even the schema may scan files
    "ibis": ("columns",),
    "duckdb": ("columns", "types"),
}


def lazy_library(obj: object) -> str | None:
    """The library of a lazy frame or expression (``dask``, ``duckdb``, …), else None.

    Decided from class names alone (the class and its bases), never by touching ``obj``.
    """
    for cls in type(obj).__mro__:
        root = cls.__module__.split(".")[0]
        if root in ("dask", "dask_expr", "pyspark", "ibis"):
            return root
        if root == "polars" and cls.__qualname__.startswith("Lazy"):
            return root
        if root == "duckdb" and "Relation" in cls.__qualname__:
            return root
    return None


def _summarize_lazy(obj: object, library: str, budget: int) -> str:
    lines = [
        f"{type_name(obj)}: a lazy {library} object (a query, not data). It was not computed: "
        f"its size and rows are unknown until it runs ({_RUN_WITH[library]})."
    ]
    for attribute in _CHEAP_ATTRIBUTES[library]:
        try:
            value = getattr(obj, attribute)
        except Exception:
            continue
        if callable(value):
            continue
        lines.append(f"{attribute}: {_short_repr(value, max(budget // 3, 80))}")
    return clip("\n".join(lines), budget)


def type_name(obj: object) -> str:
    """``DataFrame``, ``ndarray``, ``list``, … (with the module for uncommon classes)."""
    cls = type(obj)
    module = cls.__module__
    if module in ("builtins", "__main__") or module.split(".")[0] in ("pandas", "numpy"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def shape_of(obj: object) -> str:
    """A one-line size: ``(100, 3)`` for arrays and frames, ``len 12`` for sized objects."""
    if lazy_library(obj) is not None:
        return "(lazy: not computed)"
    shape = getattr(obj, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "(" + ", ".join(str(n) for n in shape) + (",)" if len(shape) == 1 else ")")
    if isinstance(obj, (str, bytes, bytearray, list, tuple, set, frozenset, dict, range)):
        return f"len {len(obj)}"
    try:
        length = len(obj)  # type: ignore[arg-type]
    except Exception:
        return ""
    return f"len {length}"


def clip(text: str, budget: int) -> str:
    """``text`` cut to at most ``budget`` characters, with a visible mark when cut."""
    return cut_end(text, budget)


class _Repr(reprlib.Repr):
    """``reprlib`` that names a lazy frame instead of calling its ``repr`` (which may run it)."""

    def repr_instance(self, obj: Any, level: int) -> str:
        library = lazy_library(obj)
        if library is not None:
            return f"<{type_name(obj)} (lazy {library}, not computed)>"
        return super().repr_instance(obj, level)


def _short_repr(obj: object, budget: int) -> str:
    limits = _Repr()
    limits.maxstring = max(budget // 2, 40)
    limits.maxother = max(budget // 2, 40)
    limits.maxlist = limits.maxtuple = limits.maxset = limits.maxdict = 20
    limits.maxlevel = 3
    try:
        return clip(limits.repr(obj), budget)
    except Exception as exc:  # a broken __repr__ must not break the summary
        return f"<{type_name(obj)}: repr failed ({type(exc).__name__})>"


def _is_dataframe(obj: object) -> bool:
    return all(hasattr(obj, attr) for attr in ("dtypes", "head", "columns", "shape"))


def _is_series(obj: object) -> bool:
    return all(hasattr(obj, attr) for attr in ("dtype", "head", "index", "shape")) and (
        len(getattr(obj, "shape", ())) == 1
    )


def _is_array(obj: object) -> bool:
    return hasattr(obj, "dtype") and hasattr(obj, "shape") and hasattr(obj, "ndim")


def _summarize_dataframe(obj: Any, budget: int) -> str:
    rows, cols = obj.shape
    lines = [f"DataFrame with {rows} rows × {cols} columns"]
    dtypes = ", ".join(f"{name}: {dtype}" for name, dtype in obj.dtypes.items())
    lines.append("dtypes: " + clip(dtypes, max(budget // 3, 80)))
    head_rows = 5
    while head_rows >= 1:
        try:
            head = obj.head(head_rows).to_string(max_cols=20, max_colwidth=40)
        except Exception:
            head = _short_repr(obj.head(head_rows), budget)
        text = "\n".join([*lines, f"head({head_rows}):", head])
        if len(text) <= budget or head_rows == 1:
            return clip(text, budget)
        head_rows -= 2
    return clip("\n".join(lines), budget)


def _summarize_series(obj: Any, budget: int) -> str:
    name = getattr(obj, "name", None)
    header = f"Series {name!r} of {obj.shape[0]} values, dtype {obj.dtype}"
    try:
        head = obj.head(10).to_string()
    except Exception:
        head = _short_repr(obj.head(10), budget)
    return clip(f"{header}\nhead(10):\n{head}", budget)


def _summarize_array(obj: Any, budget: int) -> str:
    header = f"{type_name(obj)} of shape {shape_of(obj)}, dtype {obj.dtype}"
    try:
        import numpy as np  # numpy arrays only; other array types fall back to repr

        sample = np.array2string(obj, threshold=50, edgeitems=3, max_line_width=100)
    except Exception:
        sample = _short_repr(obj, budget)
    return clip(f"{header}\n{sample}", budget)


def _summarize_mapping(obj: Mapping[Any, Any], budget: int) -> str:
    header = f"{type_name(obj)} with {len(obj)} keys"
    lines = [header]
    used = len(header)
    for shown, (key, value) in enumerate(obj.items()):
        line = f"  {key!r}: {type_name(value)} {_short_repr(value, 120)}"
        if used + len(line) + 1 > budget - 40:
            lines.append(f"  … {len(obj) - shown} more keys")
            break
        lines.append(line)
        used += len(line) + 1
    return clip("\n".join(lines), budget)


def _summarize_sequence(obj: list[Any] | tuple[Any, ...] | set[Any], budget: int) -> str:
    kinds = sorted({type_name(item) for item in list(obj)[:1000]})
    kind_text = ", ".join(kinds[:5]) + (", …" if len(kinds) > 5 else "")
    header = f"{type_name(obj)} of {len(obj)} items" + (f" ({kind_text})" if kinds else "")
    return clip(f"{header}\n{_short_repr(obj, budget - len(header) - 1)}", budget)


def _summarize_text(obj: str | bytes | bytearray, budget: int) -> str:
    header = f"{type_name(obj)} of length {len(obj)}"
    body = obj if isinstance(obj, str) else repr(bytes(obj[: budget * 2]))
    if len(obj) <= budget - len(header) - 1:
        return f"{header}\n{body}"
    return f"{header}\n{clip(body, budget - len(header) - 1)}"


def summarize(obj: object, budget: int = DEFAULT_BUDGET) -> str:
    """Describe ``obj`` in at most ``budget`` characters: type, size, and a sample of its data."""
    budget = max(budget, 80)
    library = lazy_library(obj)
    if library is not None:
        return _summarize_lazy(obj, library, budget)
    if isinstance(obj, (str, bytes, bytearray)):
        return _summarize_text(obj, budget)
    if isinstance(obj, Mapping):
        return _summarize_mapping(obj, budget)
    if isinstance(obj, (list, tuple, set, frozenset)):
        return _summarize_sequence(obj, budget)  # type: ignore[arg-type]
    try:
        if _is_dataframe(obj):
            return _summarize_dataframe(obj, budget)
        if _is_series(obj):
            return _summarize_series(obj, budget)
        if _is_array(obj):
            return _summarize_array(obj, budget)
    except Exception:
        pass  # a duck-typed lookalike that misbehaves: fall back to its repr
    header = type_name(obj)
    size = shape_of(obj)
    if size:
        header += f" ({size})"
    return clip(f"{header}\n{_short_repr(obj, budget - len(header) - 1)}", budget)
