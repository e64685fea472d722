"""The magics reference, written from the magics' own parsers when the build starts.

Every ``%agent``/``%%agent``/``%agent_tools`` form is parsed by IPython's ``magic_arguments``,
which hangs an argparse parser on the decorated function. This extension imports the notebook
layer, finds every such parser (on functions and on the magics' methods, wherever they live) and
writes ``guide/magics.md`` from their ``--help`` text: the reference cannot drift from the code,
and nothing in it is hand-copied. Found by walking the package, so moving a module breaks nothing.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

PAGE = "guide/magics.md"

HEADER = """# Magics reference

Generated from the magics' argument parsers when the docs are built (the same text as
`%agent?`, `%%agent?` and each command's `--help`): the `%%agent` cell magic, the `%agent`
commands and the `%agent_tools` commands. The guide pages say what each one is for.
"""


def tidy_doc(doc: str) -> str:
    """A docstring without its source indentation; lines appended at runtime unindented (the
    subcommands' usage lines the magics add) keep theirs, so ``inspect.cleandoc`` cannot do it."""
    first, _, rest = doc.partition("\n")
    body = [line for line in rest.splitlines() if line.strip()]
    indent = len(body[0]) - len(body[0].lstrip()) if body else 0
    prefix = " " * indent
    lines = [line.removeprefix(prefix) for line in rest.splitlines()]
    text = "\n".join([first.strip(), *(line.rstrip() for line in lines)])
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def magic_parsers() -> tuple[dict[str, Any], dict[str, str]]:
    """``prog`` → parser, for every ``magic_arguments`` parser in ``jupyter_agent.notebook``;
    and ``%name`` → docstring for each magic registered without one (``%agent_tools``: its
    subcommands have the parsers)."""
    from IPython.core.magic import Magics
    from IPython.core.magic_arguments import MagicArgumentParser

    import jupyter_agent.notebook as notebook

    found: dict[str, Any] = {}
    bare: dict[str, str] = {}

    def look(candidate: Any) -> None:
        parser = getattr(candidate, "parser", None)
        if isinstance(parser, MagicArgumentParser):
            found.setdefault(parser.prog, parser)

    for info in pkgutil.walk_packages(notebook.__path__, notebook.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module):
            if getattr(value, "__module__", None) != module.__name__:
                continue
            look(value)
            if inspect.isclass(value):
                for _, member in inspect.getmembers(value):
                    look(member)
            if inspect.isclass(value) and issubclass(value, Magics):
                for kind, prefix in (("line", "%"), ("cell", "%%")):
                    for name, attribute in value.magics[kind].items():
                        method = getattr(value, attribute)
                        if not hasattr(method, "parser"):
                            bare[prefix + name] = tidy_doc(method.__doc__ or "")
    return found, bare


def title(prog: str) -> str:
    # the cell magic's parser is named "%agent" (its usage reads "%%agent ..."); the commands'
    # parsers are named after their command line, "agent reset", "agent_tools enable", ...
    return "%%agent" if prog == "%agent" else "%" + prog


def help_text(parser: Any) -> str:
    """The parser's help as ``%agent?`` shows it, at a fixed width (argparse reads COLUMNS), without
    the reST ``::`` that ``magic_arguments`` puts before the usage line."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        text = parser.format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return inspect.cleandoc(text.removeprefix("::")).rstrip()


def page_text() -> str:
    parsers, bare = magic_parsers()
    if not parsers:
        raise RuntimeError("no magic_arguments parser found in jupyter_agent.notebook")
    order = sorted(parsers, key=lambda prog: (prog != "%agent", prog))
    parts = [HEADER]
    for name in sorted(bare):
        # the magic's docstring, as %name? shows it (its subcommands' parsers follow)
        parts.append(f"## `{name}`\n\n```text\n{bare[name]}\n```\n")
    for prog in order:
        parts.append(f"## `{title(prog)}`\n\n```text\n{help_text(parsers[prog])}\n```\n")
    return "\n".join(parts)


def write_page(app: Sphinx, config: Any) -> None:
    path = Path(app.srcdir) / PAGE
    text = page_text()
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", write_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
