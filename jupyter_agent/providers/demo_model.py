"""The offline demo model: a few deterministic tricks with the tools it is given.

No language model here — a handful of rules good enough to show the agent loop working for real
in a tutorial or on Binder, and to answer the first questions a visitor types in a data folder:
file names and globs in the prompt are read (``read_file``) or searched for (``search_files``),
"list"/"files" requests list the workspace (``list_dir``), a question about "the CSV" or "the
data" finds the CSV files and reads them. What the tools return is summarised — a CSV gets its
row count, its columns and the sum and mean of each numeric column, computed with the ``csv``
module from the text ``read_file`` returned; "revenue by region" adds group totals, "which region
has the highest revenue" / "the three worst products" ranks the groups. "Write a summary of
sales.csv to report.md" reads the data first and then writes the summary with ``write_file``.
Anything else gets a plain statement of what the demo model can and cannot do without a key.
Every answer says that this is the demo model and that ``ANTHROPIC_API_KEY`` switches to Claude.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from dataclasses import dataclass
from typing import Any

from .base import ModelRequest, ModelResponse

#: Files of these kinds are read when a search finds them.
READABLE_SUFFIXES = (
    ".csv", ".tsv", ".txt", ".md", ".json", ".py", ".toml", ".yaml", ".yml", ".ini", ".cfg",
    ".html", ".xml", ".js", ".ts", ".r", ".sql", ".log", ".ipynb",
)  # fmt: skip
#: Words that point at a kind of file, and the glob that finds it.
KIND_GLOBS = {
    "csv": "**/*.csv",
    "tsv": "**/*.tsv",
    "json": "**/*.json",
    "markdown": "**/*.md",
    "python": "**/*.py",
    "notebook": "**/*.ipynb",
    "text file": "**/*.txt",
}
LIST_WORDS = re.compile(
    r"\b(list|ls|files|folders?|director(?:y|ies)|workspace|what'?s here|contents)\b", re.I
)
FIND_ONLY_WORDS = re.compile(r"\b(find|which|where|search|locate)\b", re.I)
#: A question about the data itself (so the CSV files are found and read).
DATA_WORDS = re.compile(
    r"\b(data|dataset|table|rows?|columns?|summar\w*|overview|describe|report|total\w*|sums?|"
    r"average|mean|counts?|how many|highest|lowest|most|least|top|bottom|best|worst|largest|"
    r"smallest|biggest|max(?:imum)?|min(?:imum)?|revenue|sales|"
    r"what(?:'s|\s+is|\s+are)\s+in(?:\s+(?:it|them|there))?)\b",
    re.I,
)
HIGH_WORDS = re.compile(r"\b(highest|most|top|best|largest|biggest|max(?:imum)?|strongest)\b", re.I)
LOW_WORDS = re.compile(r"\b(lowest|least|bottom|worst|smallest|min(?:imum)?|weakest)\b", re.I)
#: Column names taken as "the" measure when a ranking question names none.
MEASURE_NAMES = ("revenue", "sales", "amount", "total")
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
#: "write … to report.md", "save a summary as notes/summary.md", "into out.txt".
WRITE_TARGET = re.compile(
    r"\b(?:write|save|put|store|create|export)\b.*?\b(?:to|into|in|as)\s+`?"
    r"((?:[\w.\-]+/)*[\w\-]+\.(?:md|markdown|txt|rst|html))`?",
    re.I,
)
PATH_TOKEN = re.compile(r"(?<![\w@])(?:[\w.*?\-]+/)*[\w*?\-]*[\w*?]\.[A-Za-z0-9*]{1,10}(?![\w/])")
MAX_FILES_READ = 3
PREVIEW_LINES = 8
PREVIEW_CHARS = 1500


def _prompt_at(messages: list[dict[str, Any]]) -> tuple[int | None, str, int]:
    """One walk back from the end: where the chat's prompt is (the last user message that
    carries text, not only tool results; ``None`` if none does), its last text, and how many
    model turns came after it. The replay asks on every request, so nothing is copied."""
    replies = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        role = message.get("role")
        if role == "assistant":
            replies += 1
            continue
        if role != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return index, content, replies
        for block in reversed(content or []):
            if isinstance(block, dict) and block.get("type") == "text":
                return index, str(block.get("text", "")), replies
    return None, "", replies


def prompt_position(messages: list[dict[str, Any]]) -> int | None:
    """Where the chat's prompt is: the last user message that carries text (not only tool
    results), or ``None``."""
    return _prompt_at(messages)[0]


def find_prompt(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The chat's prompt (last user text) and how many model turns have answered it since."""
    _index, text, replies = _prompt_at(messages)
    return text, replies


def replied_since_prompt(messages: list[dict[str, Any]]) -> int:
    """``find_prompt``'s count alone: how many model turns have answered the chat's prompt."""
    return _prompt_at(messages)[2]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    name: str
    input: dict[str, Any]
    output: str
    is_error: bool
    #: The ``tool_use`` id the result answers.
    call_id: str = ""


def outcomes_since_prompt(messages: list[dict[str, Any]]) -> list[ToolOutcome]:
    """Every tool call answered since the prompt, with its result, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    outcomes: list[ToolOutcome] = []
    start = prompt_position(messages) or 0
    for message in messages[start:]:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (
                    str(block.get("name")),
                    dict(block.get("input") or {}),
                )
            elif block.get("type") == "tool_result":
                name, arguments = calls.get(str(block.get("tool_use_id")), ("tool", {}))
                output = block.get("content", "")
                if isinstance(output, list):
                    output = "".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
                outcomes.append(
                    ToolOutcome(
                        name,
                        arguments,
                        str(output),
                        bool(block.get("is_error")),
                        str(block.get("tool_use_id") or ""),
                    )
                )
    return outcomes


def path_tokens(prompt: str) -> list[str]:
    """File names and globs mentioned in ``prompt`` (``sales.csv``, ``data/*.json``)."""
    found: list[str] = []
    for match in PATH_TOKEN.finditer(prompt):
        token = match.group(0).strip("`'\".,;:!?()")
        stem = token.rsplit(".", 1)[0]
        if not token or stem.replace(".", "").isdigit() or token.lower() in ("e.g", "i.e"):
            continue
        if token not in found:
            found.append(token)
    return found


def is_glob(token: str) -> bool:
    return any(char in token for char in "*?[")


def found_paths(search_output: str) -> list[str]:
    """The paths in a ``search_files`` result (one per line; notes and headers skipped)."""
    paths = []
    for line in search_output.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or (" " in line.strip() and not line.endswith(READABLE_SUFFIXES)):
            continue
        if "." in line.rsplit("/", 1)[-1]:
            paths.append(line)
    return paths


def _numeric_columns(header: list[str], records: list[list[str]]) -> dict[int, list[float]]:
    """Columns whose every non-empty cell is a number, by position."""
    numeric: dict[int, list[float]] = {}
    for position in range(len(header)):
        cells = [row[position].strip().replace(",", "") for row in records]
        numbers: list[float] = []
        for cell in cells:
            if not cell:
                continue
            try:
                numbers.append(float(cell))
            except ValueError:
                break
        else:
            if numbers:
                numeric[position] = numbers
    return numeric


def _column_named(word: str, header: list[str]) -> int | None:
    wanted = word.casefold().rstrip("s")
    for position, column in enumerate(header):
        if column.strip().casefold().rstrip("s") == wanted:
            return position
    return None


def summarise_csv(text: str, name: str, prompt: str = "") -> str:
    """Row count, columns, sum/mean/min/max of each numeric column; "X by Y" groups by Y."""
    sample = text[:4096]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if name.lower().endswith(".tsv") else csv.excel
    rows = [
        row for row in csv.reader(io.StringIO(text), dialect) if any(cell.strip() for cell in row)
    ]
    if not rows:
        return f"**`{name}`** is empty."
    header, body = rows[0], rows[1:]
    records = [row for row in body if len(row) == len(header)]
    skipped = len(body) - len(records)
    columns = ", ".join(f"`{column}`" for column in header)
    lines = [f"**`{name}`** has {len(records)} data rows and {len(header)} columns: {columns}."]
    if skipped:
        lines.append(
            f"({skipped} line(s) with a different number of fields were left out; if the file "
            "was cut short by `read_file`, the figures cover the part that was read.)"
        )
    numeric = _numeric_columns(header, records)
    if numeric:
        lines += ["", "| column | sum | mean | min | max |", "| --- | ---: | ---: | ---: | ---: |"]
        for position, numbers in numeric.items():
            lines.append(
                f"| {header[position]} | {_number(sum(numbers))} "
                f"| {_number(statistics.fmean(numbers))} "
                f"| {_number(min(numbers))} | {_number(max(numbers))} |"
            )
    else:
        lines.append("No column is entirely numeric.")
    lines += _grouped(prompt, header, records, numeric)
    lines += _ranked(prompt, header, records, numeric)
    return "\n".join(lines)


def _grouped(
    prompt: str, header: list[str], records: list[list[str]], numeric: dict[int, list[float]]
) -> list[str]:
    """For a prompt like "revenue by region": the sums of numeric columns per group."""
    match = re.search(r"\b(?:by|per|for each)\s+([\w-]+)", prompt, re.IGNORECASE)
    if not match or not numeric:
        return []
    key = _column_named(match.group(1), header)
    if key is None or key in numeric:
        return []
    mentioned = [p for p in numeric if re.search(rf"\b{re.escape(header[p])}\b", prompt, re.I)]
    measures = mentioned or list(numeric)
    groups: dict[str, list[float]] = {}
    for row in records:
        totals = groups.setdefault(row[key].strip(), [0.0] * len(measures))
        for index, position in enumerate(measures):
            cell = row[position].strip().replace(",", "")
            totals[index] += float(cell) if cell else 0.0
    names = " | ".join(f"{header[p]} (sum)" for p in measures)
    lines = ["", f"By `{header[key]}`:", "", f"| {header[key]} | {names} |"]
    lines.append("| --- |" + " ---: |" * len(measures))
    for group, totals in sorted(groups.items(), key=lambda item: -item[1][0]):
        lines.append(f"| {group} | " + " | ".join(_number(t) for t in totals) + " |")
    return lines


def _ranked(
    prompt: str, header: list[str], records: list[list[str]], numeric: dict[int, list[float]]
) -> list[str]:
    """For "which region has the highest revenue" or "the three worst products": a ranking.

    The groups are the values of a non-numeric column the prompt names; the measure is the
    numeric column it names (else one called revenue/sales/amount/total, else the last numeric
    one); totals are summed per group.
    """
    high, low = HIGH_WORDS.search(prompt), LOW_WORDS.search(prompt)
    if not (high or low) or not numeric:
        return []
    descending = high is not None and (low is None or high.start() < low.start())
    words = re.findall(r"[\w-]+", prompt)
    keys = [
        p for p in (_column_named(w, header) for w in words) if p is not None and p not in numeric
    ]
    if not keys:
        return []
    key = keys[0]
    named = [p for p in (_column_named(w, header) for w in words) if p in numeric]
    preferred = [p for p in numeric if header[p].strip().lower() in MEASURE_NAMES]
    measure = named[0] if named else preferred[0] if preferred else list(numeric)[-1]
    count = 1
    for word in words:
        lowered = word.lower()
        if lowered.isdigit() and 0 < int(lowered) <= 50:
            count = int(lowered)
            break
        if lowered in NUMBER_WORDS:
            count = NUMBER_WORDS[lowered]
            break
    totals: dict[str, float] = {}
    for row in records:
        cell = row[measure].strip().replace(",", "")
        group = row[key].strip()
        totals[group] = totals.get(group, 0.0) + (float(cell) if cell else 0.0)
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=descending)[:count]
    direction = "highest" if descending else "lowest"
    column, by = header[measure], header[key]
    if count == 1:
        group, total = ranked[0]
        return ["", f"**{group}** has the {direction} total `{column}`: {_number(total)}."]
    lines = ["", f"The {len(ranked)} `{by}` values with the {direction} total `{column}`:", ""]
    lines += [f"{place}. **{group}** — {_number(t)}" for place, (group, t) in enumerate(ranked, 1)]
    return lines


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) >= 1e6 else f"{value:,.2f}"


def summarise_text(text: str, name: str) -> str:
    lines = text.splitlines()
    if name.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            keys = ", ".join(f"`{key}`" for key in list(data)[:20])
            return f"**`{name}`** is a JSON object with {len(data)} keys: {keys}."
        if isinstance(data, list):
            return f"**`{name}`** is a JSON list of {len(data)} items."
    preview = "\n".join(lines[:PREVIEW_LINES])[:PREVIEW_CHARS]
    more = f"\n… ({len(lines) - PREVIEW_LINES} more lines)" if len(lines) > PREVIEW_LINES else ""
    return (
        f"**`{name}`** has {len(lines)} line{'' if len(lines) == 1 else 's'} "
        f"({len(text):,} characters). It starts:\n\n"
        f"```\n{preview}{more}\n```"
    )


#: The line under every final demo answer (``answer_only`` in ``offline.py`` takes it off).
DEMO_FOOTER = (
    "This answer came from the offline demo model, which can only list, find and read "
    "files, summarise, total and rank CSV data and write a short report. Set "
    "`ANTHROPIC_API_KEY` to use Claude."
)


#: The words ``%agent error``'s request opens with (``notebook/cell_errors.error_prompt``).
ERROR_REQUEST = "of my notebook raised an exception."

#: What the demo model answers to ``%agent error``: it cannot read a traceback, so it says so.
CANNOT_EXPLAIN_ERRORS = (
    "The offline demo model can't explain errors: it only lists, finds and reads files and "
    "summarises CSV data, and a traceback needs a real model. Set `ANTHROPIC_API_KEY` (in the "
    'kernel: `import os; os.environ["ANTHROPIC_API_KEY"] = "sk-ant-..."`, or before starting '
    "Jupyter) and run `%agent error` again."
)


class DemoModel:
    """Decides each turn from the request alone, so it is deterministic and stateless."""

    def __init__(self, notice: str) -> None:
        self.notice = notice
        self._ids = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        return {
            "type": "tool_use",
            "id": f"toolu_offline_{self._ids:04d}",
            "name": name,
            "input": arguments,
        }

    def reply(self, request: ModelRequest, prompt: str, turn: int) -> ModelResponse:
        tools = {str(schema.get("name")) for schema in request.tools}
        outcomes = outcomes_since_prompt(request.messages) if turn else []
        calls: list[dict[str, Any]]
        if turn == 0 and ERROR_REQUEST in prompt.split("\n", 1)[0]:
            text, calls = CANNOT_EXPLAIN_ERRORS, []
        elif turn == 0:
            text, calls = self._plan(prompt, tools)
        else:
            text, calls = self._follow_up(prompt, outcomes, tools, turn)
        if not calls:
            text = f"{text}\n\n---\n*{self._footer()}*"
            text = f"{self.notice}\n\n{text}" if turn == 0 else text
        elif turn == 0:
            text = f"{self.notice}\n\n{text}"
        content: list[dict[str, Any]] = [{"type": "text", "text": text.strip()}, *calls]
        return ModelResponse(content, "tool_use" if calls else "end_turn", model="offline-demo")

    @staticmethod
    def _footer() -> str:
        return DEMO_FOOTER

    def _plan(self, prompt: str, tools: set[str]) -> tuple[str, list[dict[str, Any]]]:
        calls: list[dict[str, Any]] = []
        missing: set[str] = set()
        said: list[str] = []

        def want(name: str, arguments: dict[str, Any]) -> None:
            if name in tools:
                calls.append(self._call(name, arguments))
            else:
                missing.add(name)

        target = write_target(prompt)
        if target is not None and "write_file" not in tools:
            return (
                f"I would write the summary to `{target}`, but the tool `write_file` is "
                "disabled (`%agent_tools enable write_file` turns it on).",
                [],
            )
        for token in path_tokens(prompt):
            if token == target:
                continue  # the file to write, not one to read
            if is_glob(token):
                said.append(f"search for `{token}`")
                want("search_files", {"pattern": token})
            else:
                said.append(f"read `{token}`")
                want("read_file", {"file_path": token})
        if not said:
            lowered = prompt.lower()
            for word, pattern in KIND_GLOBS.items():
                if re.search(rf"\b{word}s?\b", lowered):
                    said.append(f"look for {word} files")
                    want("search_files", {"pattern": pattern})
                    break
        if not said and LIST_WORDS.search(prompt) and not DATA_WORDS.search(prompt):
            said.append("list the workspace")
            want("list_dir", {})
        if not said and (DATA_WORDS.search(prompt) or target is not None):
            said.append("look for the CSV files")
            want("search_files", {"pattern": KIND_GLOBS["csv"]})
        if not said and LIST_WORDS.search(prompt):
            said.append("list the workspace")
            want("list_dir", {})
        if target is not None and calls and "write_file" in tools:
            said.append(f"then write the summary to `{target}`")
        if calls:
            return "I'll " + _join(said) + ".", calls
        if missing:
            names = ", ".join(f"`{name}`" for name in sorted(missing))
            return f"I would {_join(said)}, but the tool(s) {names} are disabled.", []
        return (
            "This is the offline demo model: without an API key it can only work with the files "
            "of this workspace — list them, find them by name or pattern (`**/*.py`), read one "
            "(`data/sales.csv`), summarise a CSV (rows, columns, totals), total or rank it by a "
            'column ("revenue by region", "which region has the highest revenue?") and write '
            'a short report to a file you name ("write a summary of sales.csv to report.md"). '
            "It cannot answer other questions, write code or reason about your data: set "
            "`ANTHROPIC_API_KEY` to ask Claude that.",
            [],
        )

    def _follow_up(
        self, prompt: str, outcomes: list[ToolOutcome], tools: set[str], turn: int
    ) -> tuple[str, list[dict[str, Any]]]:
        already_read = {str(o.input.get("file_path")) for o in outcomes if o.name == "read_file"}
        searches = [o for o in outcomes if o.name == "search_files" and not o.is_error]
        find_only = FIND_ONLY_WORDS.search(prompt) and not (
            DATA_WORDS.search(prompt) or write_target(prompt)
        )
        searched = {str(o.input.get("pattern")) for o in outcomes if o.name == "search_files"}
        lost = [
            name
            for name in _not_found_reads(outcomes)
            if "/" not in name and f"**/{name}" not in searched
        ]
        if lost and turn <= 2 and "search_files" in tools:
            # "sales.csv" when the file is data/sales.csv: look for it by name
            calls = [self._call("search_files", {"pattern": f"**/{name}"}) for name in lost]
            names = ", ".join(f"`{name}`" for name in lost)
            return f"{names} is not at the top of the workspace; looking for it.", calls
        if turn <= 2 and searches and not find_only and "read_file" in tools:
            targets = [
                path
                for outcome in searches
                for path in found_paths(outcome.output)
                if path.lower().endswith(READABLE_SUFFIXES) and path not in already_read
            ][:MAX_FILES_READ]
            if targets:
                calls = [self._call("read_file", {"file_path": path}) for path in targets]
                names = ", ".join(f"`{path}`" for path in targets)
                return f"Found them; reading {names}.", calls
        target = write_target(prompt)
        writes = [o for o in outcomes if o.name == "write_file"]
        reads = [o for o in outcomes if o.name == "read_file" and not o.is_error]
        if target is not None and not writes and reads and "write_file" in tools:
            report = self._report(reads, prompt)
            call = self._call("write_file", {"file_path": target, "content": report})
            return f"Writing the summary to `{target}`.", [call]
        if writes:
            return self._written(writes, reads), []
        return self._summary(outcomes, prompt), []

    def _report(self, reads: list[ToolOutcome], prompt: str) -> str:
        """The Markdown report a "write a summary … to FILE" prompt asks for."""
        sections = ["# Summary", ""]
        for outcome in reads:
            name = str(outcome.input.get("file_path", "file"))
            sections.append(_describe_file(outcome.output, name, prompt))
            sections.append("")
        sections.append(
            "*Written by the jupyter-agent offline demo model from the figures above; set "
            "`ANTHROPIC_API_KEY` for an analysis by Claude.*"
        )
        return "\n".join(sections) + "\n"

    @staticmethod
    def _written(writes: list[ToolOutcome], reads: list[ToolOutcome]) -> str:
        parts = []
        for outcome in writes:
            where = str(outcome.input.get("file_path", "the file"))
            if outcome.is_error:
                parts.append(f"Writing `{where}` failed: {outcome.output.strip()}")
            else:
                sources = ", ".join(f"`{o.input.get('file_path')}`" for o in reads)
                parts.append(
                    f"I wrote a short summary of {sources or 'the data'} to `{where}`: "
                    f"{outcome.output.strip()}."
                )
        return "\n\n".join(parts)

    def _summary(self, outcomes: list[ToolOutcome], prompt: str = "") -> str:
        parts: list[str] = []
        found_later = {
            str(o.input.get("file_path", "")).rsplit("/", 1)[-1]
            for o in outcomes
            if o.name == "read_file" and not o.is_error
        }
        for outcome in outcomes:
            if outcome.is_error and str(outcome.input.get("file_path")) in found_later:
                continue  # "sales.csv" was not found at the top, but read where it is
            if outcome.is_error:
                parts.append(f"`{outcome.name}` failed: {outcome.output.strip()}")
            elif outcome.name == "read_file":
                name = str(outcome.input.get("file_path", "file"))
                parts.append(_describe_file(outcome.output, name, prompt))
            elif outcome.name == "search_files":
                paths = found_paths(outcome.output)
                pattern = outcome.input.get("pattern", "")
                if paths:
                    listing = "\n".join(f"- `{path}`" for path in paths[:30])
                    more = f"\n- … and {len(paths) - 30} more" if len(paths) > 30 else ""
                    parts.append(f"Files matching `{pattern}`:\n\n{listing}{more}")
                else:
                    parts.append(f"Nothing matches `{pattern}`: {outcome.output.strip()}")
            elif outcome.name == "list_dir":
                parts.append(f"The workspace contains:\n\n```\n{outcome.output.strip()}\n```")
            else:
                output = outcome.output.strip()
                shown = output if len(output) <= PREVIEW_CHARS else output[:PREVIEW_CHARS] + "…"
                parts.append(f"`{outcome.name}` returned:\n\n```\n{shown}\n```")
        return "\n\n".join(parts) if parts else "The tools returned nothing to report."


def _not_found_reads(outcomes: list[ToolOutcome]) -> list[str]:
    """The file names ``read_file`` could not find, in order, without repeats."""
    names: list[str] = []
    for outcome in outcomes:
        name = str(outcome.input.get("file_path", ""))
        if (
            outcome.name == "read_file"
            and outcome.is_error
            and "not found" in outcome.output.lower()
            and name not in names
        ):
            names.append(name)
    return names


def write_target(prompt: str) -> str | None:
    """The file a prompt asks to write ("… to report.md"), or None."""
    match = WRITE_TARGET.search(prompt)
    return match.group(1) if match else None


def _describe_file(text: str, name: str, prompt: str) -> str:
    if name.lower().endswith((".csv", ".tsv")):
        return summarise_csv(text, name, prompt)
    return summarise_text(text, name)


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
