"""A small local MCP server for the tutorial (notebooks/06_mcp.ipynb) and the benchmark.

``python notebooks/mcp_servers/units_server.py`` speaks MCP over stdio. Written with the official
``mcp`` SDK (``pip install 'jupyter-claude-agent[mcp]'``); it needs no network and no credentials.
Besides its conversions it has one tool that asks the *user* a question mid-call (``choose_units``:
an MCP elicitation, like the reference "everything" server's), so the tutorial can show a
server's form without Node.js or the network.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

server = MCPServer(
    "units",
    instructions="Converts between units of length, mass and temperature. Use it for any unit "
    "conversion rather than converting in your head.",
)

#: Factors to the base unit (metre, kilogram).
_LENGTH = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "in": 0.0254,
    "ft": 0.3048,
    "mi": 1609.344,
}
_MASS = {"g": 0.001, "kg": 1.0, "lb": 0.45359237, "oz": 0.028349523125}
_TEMPERATURE = ("C", "F", "K")


def _to_kelvin(value: float, unit: str) -> float:
    return {"C": value + 273.15, "F": (value - 32) * 5 / 9 + 273.15, "K": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"C": value - 273.15, "F": (value - 273.15) * 9 / 5 + 32, "K": value}[unit]


@server.tool()
def convert(value: float, from_unit: str, to_unit: str) -> dict[str, float | str]:
    """Convert a value between units: mm cm m km in ft mi (length), g kg lb oz (mass), C F K.

    Args:
        value: the number to convert
        from_unit: the unit it is in
        to_unit: the unit wanted
    """
    for table in (_LENGTH, _MASS):
        if from_unit in table and to_unit in table:
            result = value * table[from_unit] / table[to_unit]
            return {"value": round(result, 6), "unit": to_unit}
    if from_unit in _TEMPERATURE and to_unit in _TEMPERATURE:
        result = _from_kelvin(_to_kelvin(value, from_unit), to_unit)
        return {"value": round(result, 6), "unit": to_unit}
    raise ToolError(f"cannot convert {from_unit!r} to {to_unit!r}")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged (a cheap call, for timing)."""
    return text


class UnitsChoice(BaseModel):
    """The form ``choose_units`` puts to the user."""

    system: Literal["metric", "imperial"] = Field(
        default="metric", title="Units", description="the units answers should be given in"
    )
    decimals: int = Field(default=1, title="Decimals", description="digits after the point")


def ask_for_units() -> Elicit[UnitsChoice]:
    """The question ``choose_units`` puts to the user (the SDK asks it the way the connection's
    protocol does: a request to the client mid-call up to 2025-11-25, an ``input_required``
    answer the client fills in and retries with from 2026-07-28)."""
    return Elicit("Which units should answers be given in?", UnitsChoice)


@server.tool()
async def choose_units(
    answer: Annotated[ElicitationResult[UnitsChoice], Resolve(ask_for_units)],
) -> str:
    """Ask the user in a small form which units (metric or imperial) and how many decimals
    they want answers in; the user may decline to say."""
    if isinstance(answer, AcceptedElicitation):
        choice = answer.data
        return f"The user chose {choice.system} units, {choice.decimals} decimal(s)."
    if answer.action == "decline":
        return "The user declined to choose: use the units each question names."
    return "The user cancelled the question: use the units each question names."


if __name__ == "__main__":
    server.run("stdio")
