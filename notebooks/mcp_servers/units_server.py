"""A small local MCP server for the tutorial (notebooks/06_mcp.ipynb) and the benchmark.

``python notebooks/mcp_servers/units_server.py`` speaks MCP over stdio. Written with the official
``mcp`` SDK (``pip install 'jupyter-agent[mcp]'``); it needs no network and no credentials.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

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


if __name__ == "__main__":
    server.run("stdio")
