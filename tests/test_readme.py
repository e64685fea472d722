"""The README stays the front page: small (at most 20 KB: the pitch, set-up, install, the first
cell and links), with the two commands a newcomer runs, and every link it has leads to a file of
the repository — the manual is the docs site in ``docs/``, and a link into it must not rot.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
LIMIT = 20 * 1024
#: ``[text](target)`` with a relative target; an anchor after ``#`` is dropped
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^)#\s]+)(?:#[^)\s]*)?\)")


def test_the_readme_is_at_most_20_kb() -> None:
    size = len(README.read_bytes())
    assert size <= LIMIT, f"README.md is {size} bytes; move sections into docs/ (limit {LIMIT})"


def test_the_readme_shows_the_two_commands_and_the_first_cell() -> None:
    text = README.read_text(encoding="utf-8")
    assert "```bash\n./dev.sh demo\n```" in text
    assert "```bash\n./dev.sh test\n```" in text
    assert "```python\n%load_ext jupyter_agent\n```" in text


def test_every_relative_link_of_the_readme_leads_to_a_file() -> None:
    targets = LINK.findall(README.read_text(encoding="utf-8"))
    assert any(target.startswith("docs/") for target in targets), "no link into the docs"
    missing = sorted({target for target in targets if not (REPO / target).exists()})
    assert not missing, f"README links to files that do not exist: {missing}"
