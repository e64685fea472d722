"""Every character the notebook layer shows has a glyph in DejaVu Sans (issue 15, point 4).

Emoji icons (an hourglass, a raised hand, a stop square, a no-entry sign) rendered as empty
boxes where no emoji font is installed — Binder's default image has DejaVu and Liberation only.
This asks fontconfig, the library the browser itself uses on Linux, whether DejaVu Sans covers
each non-ASCII character that appears in the package's notebook code.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import jupyter_agent

NOTEBOOK_CODE = Path(jupyter_agent.__file__).parent / "notebook"


def dejavu_sans_has(char: str) -> bool:
    found = subprocess.run(
        ["fc-list", f"DejaVu Sans:charset={ord(char):x}", "family"],
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(found.stdout.strip())


@pytest.mark.skipif(shutil.which("fc-list") is None, reason="needs fontconfig (fc-list)")
def test_every_shown_character_has_a_glyph_in_dejavu_sans() -> None:
    if not dejavu_sans_has("A"):
        pytest.skip("DejaVu Sans is not installed (.ci/run installs fonts-dejavu-core)")
    characters = {
        char
        for path in NOTEBOOK_CODE.rglob("*.py")
        for char in path.read_text(encoding="utf-8")
        if ord(char) > 127
    }
    assert characters, "expected some non-ASCII marks (✓, …) in the notebook code"
    missing = sorted(f"{c} U+{ord(c):04X}" for c in characters if not dejavu_sans_has(c))
    assert not missing, f"no glyph in DejaVu Sans (shows as an empty box): {missing}"
