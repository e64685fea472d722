"""save_session_context: the session context lands in the session file, atomically, confined."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hostile_layout import Layout

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.session_file import SaveSessionContextTool, render_session_file
from jupyter_agent.tools.registry import ToolRegistry


def registry_for(context: ToolContext) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(SaveSessionContextTool(context))
    return registry


async def test_saves_to_the_default_file(layout: Layout) -> None:
    context = ToolContext(layout.ws, session_context="## user\nhello\n\n## assistant\nhi\n")
    result = await registry_for(context).call("save_session_context", {"reason": "checkpoint"})
    assert not result.is_error, result.content
    target = layout.ws / ".jupyter_agent" / "session.md"
    assert result.content.startswith("Session context saved to .jupyter_agent/session.md")
    text = target.read_text()
    assert text.startswith("# Session context\n\n- Saved: ")
    assert "- Reason: checkpoint\n" in text
    assert text.endswith("## user\nhello\n\n## assistant\nhi\n")
    assert sorted(p.name for p in target.parent.iterdir()) == ["session.md"]


async def test_reads_live_context_and_overwrites(layout: Layout) -> None:
    class Source:
        system_prompt = ""
        session_context = "first"

    source = Source()
    context = ToolContext(layout.ws)
    context.bind(source)
    registry = registry_for(context)
    await registry.execute("save_session_context", {"reason": "one"})
    source.session_context = "second"
    await registry.execute("save_session_context", {"reason": "two"})
    text = (layout.ws / ".jupyter_agent" / "session.md").read_text()
    assert text.endswith("second\n") and "first" not in text and "- Reason: two" in text


async def test_relative_configured_path_is_inside_the_workspace(layout: Layout) -> None:
    context = ToolContext(layout.ws, session_context="ctx", session_context_file_path="notes/s.md")
    await registry_for(context).execute("save_session_context", {"reason": "r"})
    assert (layout.ws / "notes" / "s.md").read_text().endswith("ctx\n")


async def test_relative_path_escaping_is_refused(layout: Layout) -> None:
    before = layout.snapshot_outside()
    for bad in ("../outside/session.md", "link_out_dir/session.md", "link_out_file"):
        context = ToolContext(layout.ws, session_context="x", session_context_file_path=bad)
        result = await registry_for(context).call("save_session_context", {"reason": "r"})
        assert result.is_error and "outside the workspace" in result.content, bad
    assert layout.snapshot_outside() == before


async def test_symlink_planted_at_the_default_path_is_refused(layout: Layout) -> None:
    (layout.ws / ".jupyter_agent").symlink_to(layout.outside)
    before = layout.snapshot_outside()
    context = ToolContext(layout.ws, session_context="x")
    result = await registry_for(context).call("save_session_context", {"reason": "r"})
    assert result.is_error
    assert layout.snapshot_outside() == before


async def test_absolute_path_chosen_by_the_program_is_used(layout: Layout, tmp_path: Path) -> None:
    chosen = tmp_path / "elsewhere" / "session.md"
    context = ToolContext(layout.ws, session_context="x", session_context_file_path=chosen)
    result = await registry_for(context).call("save_session_context", {"reason": "r"})
    assert not result.is_error and str(chosen) in result.content
    assert chosen.read_text().endswith("x\n")


async def test_reason_is_required(layout: Layout) -> None:
    result = await registry_for(ToolContext(layout.ws)).call("save_session_context", {})
    assert result.is_error and "reason" in result.content
    assert not (layout.ws / ".jupyter_agent").exists()


def test_render_session_file() -> None:
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert render_session_file("", "why", now=when) == (
        "# Session context\n\n- Saved: 2024-05-01 12:30:00 UTC\n- Reason: why\n\n"
        "_(no conversation yet)_\n"
    )
