"""Write the offline model's recorded sessions for the tutorials, with figures from the data.

No API key was at hand when the tutorials were written, so these cassettes are authored, not
recorded: each is a Claude-style session in the exact format ``RecordingProvider`` writes, whose
``tool_use`` calls run for real in the notebook and whose answers quote numbers computed here from
``notebooks/data`` (never typed in by hand). Re-record any of them against Claude with
``RecordingProvider`` (see ``cassettes/README.md``); rebuild them all with

    python notebooks/cassettes/make_cassettes.py        # rewrites the cassettes here
    python notebooks/cassettes/make_cassettes.py DIR    # writes them into DIR instead
"""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE.parent.parent))  # the repository, for the cassette writer

from jupyter_agent.notebook.front.plan_mode import GO_PROMPT, plan_prompt  # noqa: E402
from jupyter_agent.providers.offline import save_cassette  # noqa: E402

Block = dict[str, Any]


def eur(value: float) -> str:
    return f"€{value:,.2f}"


def pct(new: float, old: float) -> str:
    return f"{(new / old - 1) * 100:+.0f}%"


class Ids:
    """Tool-use ids shaped like the API's, stable from run to run."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"toolu_01{self.prefix}{self.count:04d}"


def text(value: str) -> Block:
    return {"type": "text", "text": value.strip("\n")}


def call(ids: Ids, tool_name: str, **arguments: Any) -> Block:
    return {"type": "tool_use", "id": ids(), "name": tool_name, "input": arguments}


def reply(*blocks: Block) -> dict[str, Any]:
    has_calls = any(block["type"] == "tool_use" for block in blocks)
    return {"content": list(blocks), "stop_reason": "tool_use" if has_calls else "end_turn"}


def sales() -> list[dict[str, Any]]:
    with (DATA / "sales.csv").open(encoding="utf-8") as handle:
        return [
            {**row, "units": int(row["units"]), "revenue": float(row["revenue"])}
            for row in csv.DictReader(handle)
        ]


def totals(rows: list[dict[str, Any]], *keys: str) -> dict[Any, float]:
    result: dict[Any, float] = defaultdict(float)
    for row in rows:
        key = tuple(row[k] for k in keys) if len(keys) > 1 else row[keys[0]]
        result[key] += row["revenue"]
    return {k: round(v, 2) for k, v in result.items()}


# -- 01 quickstart -------------------------------------------------------------------------------

QUICKSTART_PROMPTS = (
    "What is in data/sales.csv? Give me a short overview: the period it covers, the regions and "
    "products, the total revenue, and the strongest and weakest region.",
    "Is the West really growing, or is that just the December peak? Compare its January and "
    "December numbers.",
)


def quickstart() -> list[dict[str, Any]]:
    rows = sales()
    ids = Ids("QS")
    by_region = sorted(totals(rows, "region").items(), key=lambda kv: -kv[1])
    by_month = totals(rows, "month")
    total = round(sum(r["revenue"] for r in rows), 2)
    best_month = max(by_month, key=lambda m: by_month[m])
    worst_month = min(by_month, key=lambda m: by_month[m])
    months = sorted(by_month)
    products = list(dict.fromkeys(r["product"] for r in rows))
    regions = list(dict.fromkeys(r["region"] for r in rows))
    region_lines = "\n".join(
        f"| {region} | {eur(value)} | {value / total * 100:.1f}% |" for region, value in by_region
    )
    overview = f"""
**`data/sales.csv`** holds monthly sales for **{len(months)} months** ({months[0]} to {months[-1]}),
one row per month × region × product — {len(rows)} rows with the columns `month`, `region`,
`product`, `units`, `unit_price` and `revenue` (revenue = units × unit price).

- **Regions:** {", ".join(regions)}
- **Products:** {", ".join(products)}
- **Total revenue:** **{eur(total)}** from {sum(r["units"] for r in rows):,} units

| region | revenue | share |
| --- | ---: | ---: |
{region_lines}

**{by_region[0][0]}** is the strongest region and **{by_region[-1][0]}** the weakest. Across all
regions, {best_month} was the best month ({eur(by_month[best_month])}) and {worst_month} the
weakest ({eur(by_month[worst_month])}), so there is a clear year-end peak.
"""
    first = {
        "prompt": QUICKSTART_PROMPTS[0],
        "responses": [
            reply(
                text("I'll read the file to see what it contains."),
                call(ids, "read_file", file_path="data/sales.csv"),
            ),
            reply(text(overview)),
        ],
    }

    west = {r["product"]: {} for r in rows if r["region"] == "West"}
    for r in rows:
        if r["region"] == "West" and r["month"] in (months[0], months[-1]):
            west[r["product"]][r["month"]] = r["revenue"]
    jan = round(sum(v[months[0]] for v in west.values()), 2)
    dec = round(sum(v[months[-1]] for v in west.values()), 2)
    all_jan, all_dec = by_month[months[0]], by_month[months[-1]]
    product_lines = "\n".join(
        f"| {product} | {eur(v[months[0]])} | {eur(v[months[-1]])} "
        f"| {pct(v[months[-1]], v[months[0]])} |"
        for product, v in west.items()
    )
    region_month = totals(rows, "region", "month")
    growth = {
        region: region_month[(region, months[-1])] / region_month[(region, months[0])] - 1
        for region in regions
    }
    others = ", ".join(
        f"{region} {growth[region] * 100:+.0f}%" for region in regions if region != "West"
    )
    follow_up = """
Let me pull just the West's January and December rows.
"""
    # the prose below states these facts; check them against the data
    assert max(growth, key=lambda r: growth[r]) == "West"
    change = {p: v[months[-1]] / v[months[0]] for p, v in west.items()}
    assert max(change, key=lambda p: change[p]) == "Gizmo"
    assert min(change, key=lambda p: change[p]) == "Doohickey"
    assert growth["West"] > all_dec / all_jan - 1
    comparison = f"""
The West's revenue went from **{eur(jan)}** in January to **{eur(dec)}** in December
(**{pct(dec, jan)}**):

| product | Jan | Dec | change |
| --- | ---: | ---: | ---: |
{product_lines}

Part of that is the December peak: over all regions, December revenue is {pct(all_dec, all_jan)}
on January ({eur(all_jan)} → {eur(all_dec)}). But the West grew much faster than that, and faster
than every other region ({others}), so the growth is real, not just seasonal. Every product grew,
led by Gizmo; Doohickey grew least.

A fairer check would compare whole quarters rather than two single months — ask me and I'll
compute Q1 against Q4.
"""
    second = {
        "prompt": QUICKSTART_PROMPTS[1],
        "responses": [
            reply(
                text(follow_up),
                call(
                    ids,
                    "search_text",
                    pattern=f"^({months[0]}|{months[-1]}),West,",
                    path="data/sales.csv",
                ),
            ),
            reply(text(comparison)),
        ],
    }
    return [first, second, *quickstart_plan(rows, ids)]


QUARTERS_OF = ("Q1", "Q2", "Q3", "Q4")
QUARTERS_FILE = "scratch/01_quarters.csv"
QUICKSTART_PLAN_PROMPT = (
    f"Make a table of each region's revenue per quarter and save it as {QUARTERS_FILE}."
)


def quickstart_plan(rows: list[dict[str, Any]], ids: Ids) -> list[dict[str, Any]]:
    """``%%agent --plan`` in the quickstart: look, plan, and after ``%agent go`` do it."""
    quarter_of = {m: QUARTERS_OF[(int(m[5:7]) - 1) // 3] for m in {r["month"] for r in rows}}
    by_quarter = totals(
        [{**r, "quarter": quarter_of[r["month"]]} for r in rows], "region", "quarter"
    )
    regions = list(dict.fromkeys(r["region"] for r in rows))
    table = "region," + ",".join(QUARTERS_OF) + "\n"
    for region in regions:
        table += region + "," + ",".join(f"{by_quarter[(region, q)]:.2f}" for q in QUARTERS_OF)
        table += "\n"
    plan = f"""
The file has one row per month, region and product, with the revenue in its own column, so the
table needs no other data. My plan:

1. Read `data/sales.csv` whole (done for the first rows above: `month` is `YYYY-MM`).
2. Map each month to its quarter (Jan–Mar → Q1, …, Oct–Dec → Q4).
3. Add up `revenue` per region and quarter: {len(regions)} regions × 4 quarters.
4. Write the table to `{QUARTERS_FILE}` with one row per region and a column per quarter.

Nothing has been written yet. Say go and I'll do it.
"""
    done = f"""
Done: `{QUARTERS_FILE}` holds {len(regions)} rows, one per region, with the revenue of Q1 to Q4.
The West's Q4 is its best quarter, {eur(by_quarter[("West", "Q4")])}.
"""
    return [
        {
            "prompt": plan_prompt(QUICKSTART_PLAN_PROMPT),
            "responses": [
                reply(
                    text("First a look at the file's columns."),
                    call(ids, "read_file", file_path="data/sales.csv", limit=3),
                ),
                reply(text(plan)),
            ],
        },
        {
            "prompt": GO_PROMPT,
            "responses": [
                reply(
                    text("Writing the table."),
                    call(ids, "write_file", file_path=QUARTERS_FILE, content=table),
                ),
                reply(text(done)),
            ],
        },
    ]


# -- 02 tools ------------------------------------------------------------------------------------


def tools() -> list[dict[str, Any]]:
    ids = Ids("TL")
    refusal = """
I can't show you that file: `../README.md` is outside my workspace. My file tools only work
inside this notebook's folder, and the read was refused before anything was opened:

> Path '../README.md' is outside the workspace

That's deliberate — it keeps me from reading or changing anything you didn't put in front of me.
If you want me to look at the README, you can:

- copy it into this folder (for example `cp ../README.md .`) and ask again, or
- start the session with the repository as the workspace:
  `%config AgentMagics.workspace = ".."` (that gives me access to the whole repository).
"""
    return [
        {
            "prompt": "Show me the first ten lines of ../README.md.",
            "responses": [
                reply(call(ids, "read_file", file_path="../README.md", limit=10)),
                reply(text(refusal)),
            ],
        }
    ]


# -- 03 custom tools -----------------------------------------------------------------------------

TOP_CUSTOMERS_SQL = """SELECT c.name, c.city, COUNT(o.id) AS orders, SUM(o.quantity) AS items,
       ROUND(SUM(o.quantity * p.price), 2) AS spend
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN products p ON p.id = o.product_id
GROUP BY c.id
ORDER BY spend DESC
LIMIT 3"""


def favourites_sql(names: list[str]) -> str:
    listed = ", ".join(f"'{name}'" for name in names)
    return f"""SELECT c.name AS customer, p.name AS product, SUM(o.quantity) AS items,
       ROUND(SUM(o.quantity * p.price), 2) AS spend
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN products p ON p.id = o.product_id
WHERE c.name IN ({listed})
GROUP BY c.id, p.id
ORDER BY c.name, items DESC"""


def custom_tools() -> list[dict[str, Any]]:
    ids = Ids("CT")
    db = sqlite3.connect(f"file:{DATA / 'shop.sqlite'}?mode=ro", uri=True)
    try:
        top = db.execute(TOP_CUSTOMERS_SQL).fetchall()
        names = [row[0] for row in top]
        rows = db.execute(favourites_sql(names)).fetchall()
        shop_total = db.execute(
            "SELECT SUM(o.quantity * p.price) FROM orders o JOIN products p ON p.id = o.product_id"
        ).fetchone()[0]
    finally:
        db.close()
    by_customer: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for customer, product, items, spend in rows:
        by_customer[customer].append((product, items, spend))
    lines = []
    for rank, (name, city, orders, items, spend) in enumerate(top, start=1):
        products = by_customer[name]  # ordered by items, most first
        favourite, fav_items, fav_spend = products[0]
        biggest = max(products, key=lambda item: item[2])
        money_note = (
            f"that is also where most of the money goes ({eur(fav_spend)})"
            if biggest[0] == favourite
            else f"but the most money goes to {biggest[0]} ({eur(biggest[2])})"
        )
        lines.append(
            f"{rank}. **{name}** ({city}) — **{eur(spend)}** over {orders} orders, {items} items. "
            f"Buys **{favourite}** most ({fav_items} items); {money_note}."
        )
    top_share = sum(row[4] for row in top) / shop_total * 100
    answer = f"""
Here are the three customers with the highest total spend:

{chr(10).join(lines)}

Together they account for {top_share:.0f}% of all revenue in the database
({eur(shop_total)}), so the shop leans heavily on a few regulars.
"""
    return [
        {
            "prompt": "Who are our three best customers by total spend, and what does each of "
            "them buy most? Use the shop database.",
            "responses": [
                reply(
                    text("I'll start with total spend per customer."),
                    call(ids, "query_shop", sql=TOP_CUSTOMERS_SQL),
                ),
                reply(
                    text("Now what each of them buys, by product."),
                    call(ids, "query_shop", sql=favourites_sql(names)),
                ),
                reply(text(answer)),
            ],
        }
    ]


# -- 04 data analysis ----------------------------------------------------------------------------

ANALYSIS_PROMPTS = (
    "Have a look at the DataFrame df in my session. What does it hold, and is there anything I "
    "should check before analysing it?",
    "Write a script analysis.py that reads sales.csv (in the workspace) and computes revenue per "
    "region per quarter and each region's growth from Q1 to Q4, using only the standard library. "
    "It should save the table to quarterly.csv. Run it, then write a short Markdown report, "
    "report.md, with the results.",
)

ANALYSIS_SCRIPT = '''"""Revenue per region and quarter from sales.csv, and Q1 to Q4 growth.

Standard library only, so it runs with any Python 3. Writes quarterly.csv and prints a summary.
"""

import csv
from collections import defaultdict

QUARTERS = ["Q1", "Q2", "Q3", "Q4"]


def quarter(month: str) -> str:
    return QUARTERS[(int(month[5:7]) - 1) // 3]


def growth(values: list[float]) -> float:
    return (values[-1] / values[0] - 1) * 100


revenue = defaultdict(float)  # (region, quarter) -> EUR
rows = mismatches = 0
with open("sales.csv", newline="", encoding="utf-8") as handle:
    for row in csv.DictReader(handle):
        rows += 1
        units, price, amount = int(row["units"]), float(row["unit_price"]), float(row["revenue"])
        if abs(units * price - amount) > 0.005:
            mismatches += 1
        revenue[row["region"], quarter(row["month"])] += amount

regions = sorted({region for region, _ in revenue})
table = {region: [revenue[region, q] for q in QUARTERS] for region in regions}
table["total"] = [sum(revenue[r, q] for r in regions) for q in QUARTERS]

with open("quarterly.csv", "w", newline="", encoding="utf-8") as handle:
    writer = csv.writer(handle, lineterminator="\\n")
    writer.writerow(["region", *QUARTERS, "growth_q1_q4_pct"])
    for region, values in table.items():
        writer.writerow([region, *(f"{v:.2f}" for v in values), f"{growth(values):.1f}"])

print(f"{rows} rows read, {mismatches} where revenue != units x unit_price")
print(f"{'region':<8}" + "".join(f"{q:>12}" for q in QUARTERS) + f"{'Q1->Q4':>9}")
for region, values in sorted(table.items(), key=lambda item: -sum(item[1])):
    cells = "".join(f"{v:>12,.2f}" for v in values)
    print(f"{region:<8}{cells}{growth(values):>+8.1f}%")
print("wrote quarterly.csv")
'''


def run_analysis_script() -> tuple[str, dict[str, list[float]]]:
    """Run the script the recorded model writes, exactly as the notebook will; its real output."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "sales.csv").write_bytes((DATA / "sales.csv").read_bytes())
        Path(folder, "analysis.py").write_text(ANALYSIS_SCRIPT, encoding="utf-8")
        output = subprocess.run(
            [sys.executable, "analysis.py"], cwd=folder, capture_output=True, text=True, check=True
        ).stdout
        with Path(folder, "quarterly.csv").open(encoding="utf-8") as handle:
            table = {
                row["region"]: [float(row[q]) for q in ("Q1", "Q2", "Q3", "Q4")]
                for row in csv.DictReader(handle)
            }
    return output, table


def data_analysis() -> list[dict[str, Any]]:
    ids = Ids("DA")
    rows = sales()
    look = f"""
`df` is a pandas DataFrame of **{len(rows)} rows × 6 columns** — monthly sales for 2024, one row
per month, region and product:

| column | type | meaning |
| --- | --- | --- |
| `month` | string | `2024-01` … `2024-12` |
| `region` | string | North, South, East, West |
| `product` | string | Widget, Gadget, Gizmo, Doohickey |
| `units` | int | units sold |
| `unit_price` | float | price per unit (EUR) |
| `revenue` | float | units × unit price |

Before analysing it I would check:

1. **`month` is text**, not a date — fine for grouping, but convert it
   (`pd.to_datetime(df.month)` or `pd.PeriodIndex(df.month, freq="M")`) before any time-series
   work such as resampling to quarters.
2. **`revenue` should equal `units × unit_price`** on every row; the preview agrees, but only
   five rows are shown, so it's worth checking all of them.
3. **Completeness:** 12 months × 4 regions × 4 products = 192 combinations, which matches the row
   count — so probably no gaps, but a duplicate plus a missing row would hide behind that number.

Want me to write a script that checks these and builds a quarterly summary?
"""
    first = {
        "prompt": ANALYSIS_PROMPTS[0],
        "responses": [
            reply(
                text("Let me see which variables your session has."),
                call(ids, "list_variables"),
            ),
            reply(call(ids, "inspect_variable", name="df")),
            reply(text(look)),
        ],
    }

    output, table = run_analysis_script()
    assert "0 where revenue != units x unit_price" in output, output

    def growth(values: list[float]) -> float:
        return (values[-1] / values[0] - 1) * 100

    regions = {k: v for k, v in table.items() if k != "total"}
    total = table["total"]
    ranked = sorted(regions, key=lambda r: -growth(regions[r]))
    biggest = max(regions, key=lambda r: sum(regions[r]))
    low_quarter = min(range(4), key=lambda i: total[i])
    assert biggest != ranked[0]  # the report says the biggest region is not the fastest-growing
    smallest = min(regions, key=lambda r: sum(regions[r]))
    assert ranked[0] == smallest  # "still the smallest region"
    assert all(max(range(4), key=lambda i: v[i]) == 3 for v in regions.values())  # Q4 everywhere
    ordered = [*sorted(regions, key=lambda r: -sum(regions[r])), "total"]
    table_lines = "\n".join(
        f"| {name} | "
        + " | ".join(f"{v:,.2f}" for v in table[name])
        + f" | {growth(table[name]):+.1f}% |"
        for name in ordered
    )
    report = f"""# Sales 2024: revenue by region and quarter

*Source: `sales.csv` ({len(rows)} rows: 12 months × 4 regions × 4 products). Computed by
`analysis.py`; the full table is in `quarterly.csv`.*

## Quarterly revenue (EUR)

| region | Q1 | Q2 | Q3 | Q4 | Q1 → Q4 |
| --- | ---: | ---: | ---: | ---: | ---: |
{table_lines}

## Findings

- **{ranked[0]} grows fastest**: {growth(regions[ranked[0]]):+.1f}% from Q1 to Q4, ahead of
  {ranked[1]} ({growth(regions[ranked[1]]):+.1f}%). It is still the smallest region, but the gap
  is closing.
- **{biggest} is the largest region** ({sum(regions[biggest]):,.2f} EUR over the year) but grows
  the slowest ({growth(regions[biggest]):+.1f}%).
- **Seasonality:** Q{low_quarter + 1} is the weakest quarter overall ({total[low_quarter]:,.2f}
  EUR) and Q4 the strongest ({total[3]:,.2f} EUR, {(total[3] / total[low_quarter] - 1) * 100:+.1f}%
  on Q{low_quarter + 1}), so compare like-for-like quarters when judging growth.

## Data checks

- All {len(rows)} rows were read; `revenue` equals `units × unit_price` on every one of them.
"""
    denied_command = "python3 analysis.py && cat quarterly.csv"
    done = f"""
Done. In the workspace:

- **`analysis.py`** — standard-library script: reads `sales.csv`, checks that revenue equals
  units × unit price on every row, and sums revenue per region and quarter;
- **`quarterly.csv`** — the table it produced (four regions plus a total row);
- **`report.md`** — the write-up.

Headlines: **{ranked[0]}** grows fastest ({growth(regions[ranked[0]]):+.1f}% Q1 → Q4), **{biggest}**
is the biggest region but grows slowest ({growth(regions[biggest]):+.1f}%), and Q4 is the
strongest quarter everywhere. All {len(rows)} rows passed the revenue check.

One note on the run: my first command, `{denied_command}`, was declined by your approval reviewer
(it only lets a single `python SCRIPT.py` through), so I ran the script on its own; it prints the
table, so nothing was lost.
"""
    second = {
        "prompt": ANALYSIS_PROMPTS[1],
        "responses": [
            reply(
                text("I'll write the script first."),
                call(ids, "write_file", file_path="analysis.py", content=ANALYSIS_SCRIPT),
            ),
            reply(
                text("Now I'll run it and show the CSV it writes."),
                call(ids, "run_bash", command=denied_command),
            ),
            reply(
                text(
                    "That combined command was declined. I'll run just the script — it prints "
                    "the table itself."
                ),
                call(ids, "run_bash", command="python3 analysis.py"),
            ),
            reply(
                text("The numbers are in. Writing the report."),
                call(ids, "write_file", file_path="report.md", content=report),
            ),
            reply(text(done)),
        ],
    }
    return [first, second]


# -- 06 MCP servers -------------------------------------------------------------------------------

MCP_PROMPT = (
    "A marathon is 26.2 miles: how many kilometres is that? And my recipe says 350 °F — what is "
    "that in Celsius? Use the units server."
)


#: The prompt whose answer calls the server's tool that asks the user (an MCP elicitation).
MCP_FORM_PROMPT = (
    "Which units do I want my answers in? Ask me with the units server's form, and keep to what "
    "I choose."
)
#: The recorded answer cannot know what the user chose (the form is answered at replay time), so
#: it says what follows from either outcome; the call's result above it says which one it was.
MCP_FORM_ANSWER = """
The units server asked you in its form; its reply is in the call above. If you chose a system
there, I'll give conversions in it, rounded as you said. If the form was declined — a notebook
run with nobody at it (nbval, nbconvert, papermill) declines every form — I'll keep to the units
each question names.
"""


def units_convert(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    """The tutorial's MCP server's own ``convert`` (imported from the shipped script)."""
    import importlib.util

    path = HERE.parent / "mcp_servers" / "units_server.py"
    spec = importlib.util.spec_from_file_location("units_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result: dict[str, Any] = module.convert(value, from_unit, to_unit)
    return result


def mcp_servers() -> list[dict[str, Any]]:
    ids = Ids("MC")
    km = units_convert(26.2, "mi", "km")["value"]
    celsius = units_convert(350, "F", "C")["value"]
    answer = f"""
According to the units server:

- **26.2 miles = {km:.2f} km** (the server says {km} km), so a marathon is a little over 42 km.
- **350 °F = {celsius:.1f} °C** (the server says {celsius} °C) — most recipes round that to
  175–180 °C, or gas mark 4.
"""
    return [
        {
            "prompt": MCP_PROMPT,
            "responses": [
                reply(
                    text("I'll ask the units server for both conversions."),
                    call(ids, "units__convert", value=26.2, from_unit="mi", to_unit="km"),
                    call(ids, "units__convert", value=350, from_unit="F", to_unit="C"),
                ),
                reply(text(answer)),
            ],
        },
        {
            "prompt": MCP_FORM_PROMPT,
            "responses": [
                reply(
                    text("I'll let the units server ask you: it has a form for exactly that."),
                    call(ids, "units__choose_units"),
                ),
                reply(text(MCP_FORM_ANSWER)),
            ],
        },
    ]


# -- 05 notebook canvas --------------------------------------------------------------------------

#: The tutorial's failing cell, which ``%agent error`` sends.
CANVAS_FAILING_CELL = 'df["revenue_per_unit"] = df["revenue"] / df["unit"]'
CANVAS_PROMPTS = (
    "Look at my recent cells and the plot: what does the plot show, and do the revenue per unit "
    "figures look right now?",
    "Read 01_quickstart.ipynb and tell me in two sentences what it covers.",
    "Rewrite notes.md as a short summary of what we found: the revenue per unit of each product "
    "and the best and worst month. Also save the per-unit figures as per_unit.csv.",
)
CANVAS_FIX = """df["revenue_per_unit"] = df["revenue"] / df["units"]
df.groupby("product")["revenue_per_unit"].mean().round(2)"""


def error_prompt_pattern() -> str:
    """What ``%agent error`` sends for the failing cell, with ``*`` for the parts that differ from
    run to run: the cell's execution count (nbval's differ from a front end's) and the traceback
    (it names this machine's paths and the kernel's process id)."""
    from jupyter_agent.notebook.front.cell_errors import FailedCell, error_prompt

    prompt = error_prompt(FailedCell(1, CANVAS_FAILING_CELL, "<traceback>"))
    assert prompt.startswith("Cell [1] ") and prompt.count("*") == 0
    return "Cell [*] " + prompt[len("Cell [1] ") : prompt.index("<traceback>")] + "*"


def notebook_canvas() -> list[dict[str, Any]]:
    import json

    rows = sales()
    ids = Ids("NC")
    by_month = totals(rows, "month")
    months = sorted(by_month)
    best = max(by_month, key=lambda m: by_month[m])
    worst = min(by_month, key=lambda m: by_month[m])
    per_unit: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        per_unit[row["product"]].append(row["revenue"] / row["units"])
    means = {p: round(sum(v) / len(v), 2) for p, v in sorted(per_unit.items())}
    listed = ", ".join(f"{product} {eur(value)}" for product, value in means.items())
    # the answers below state these facts; check them against the data
    assert months[0] < worst < months[-1] and best == months[-1]
    for row in rows:  # one price per product all year, and revenue ÷ units is that price
        assert abs(row["revenue"] / row["units"] - means[row["product"]]) < 0.005
        assert abs(float(row["unit_price"]) - means[row["product"]]) < 0.005
    columns = ", ".join(f"`{name}`" for name in rows[0])
    explanation = f"""
**What went wrong:** `df["unit"]` asks for a column named `unit`, and `df` has none, so pandas
raised `KeyError: 'unit'` (the long traceback is pandas looking the name up in its column index).
The columns are {columns}: you meant **`units`**. Nothing was changed — the failed assignment
never created `revenue_per_unit`.

**The fix** is in a new cell right below this one, not run yet: it divides by `units`, and adds
the average revenue per unit of each product so you can check the result at a glance.
"""
    diagnosis = f"""
**The plot** shows monthly revenue for {months[0][:4]}: it starts at {eur(by_month[months[0]])} in
{months[0]}, dips to its lowest in {worst} ({eur(by_month[worst])}) and climbs to its peak in
{best} ({eur(by_month[best])}) — {pct(by_month[best], by_month[worst])} on the low month, a clear
year-end peak.

**Revenue per unit** looks right now: the fixed cell ran cleanly and gives {listed}. Those are
exactly the `unit_price` values: each product kept one price all year, so revenue ÷ units had
nothing else to show. The earlier error was only the column name.
"""
    quickstart_nb = json.loads((HERE.parent / "01_quickstart.ipynb").read_text(encoding="utf-8"))
    cells = quickstart_nb["cells"]
    prompts = [c for c in cells if "".join(c["source"]).startswith("%%agent")]
    summary = f"""
`01_quickstart.ipynb` has {len(cells)} cells, {len(prompts)} of them `%%agent` prompts: it loads
the extension, asks the agent for an overview of `data/sales.csv` (the agent reads the file with
its tools) and follows up on the West region. Then come the `%agent_tools` panel, a plan made
with `--plan` and carried out with `%agent go`, a `--budget` too small for one request, and at the
end `%agent usage` (tokens and cost) and `%agent reset`.
"""
    table = "\n".join(f"| {product} | {eur(value)} |" for product, value in means.items())
    notes = f"""# Sales 2024: what we found

## Revenue per unit (average over the year)

| product | revenue per unit |
| --- | ---: |
{table}

## Months

- Best month: {best} ({eur(by_month[best])})
- Worst month: {worst} ({eur(by_month[worst])})
"""
    per_unit_csv = "product,revenue_per_unit\n" + "".join(
        f"{product},{value:.2f}\n" for product, value in means.items()
    )
    written = """
Done: **`notes.md`** now holds the summary (revenue per unit of each product, best and worst
month), and **`per_unit.csv`** has the per-unit figures, one row per product.
"""
    return [
        {
            "prompt": error_prompt_pattern(),
            "match": "pattern",
            "responses": [
                reply(
                    text("A `KeyError` for `'unit'`. Let me check which columns `df` has."),
                    call(ids, "inspect_variable", name="df"),
                ),
                reply(
                    text("The column is `units`, not `unit`. I'll propose the fixed cell."),
                    call(ids, "propose_cell", code=CANVAS_FIX),
                ),
                reply(text(explanation)),
            ],
        },
        {
            "prompt": CANVAS_PROMPTS[0],
            "responses": [
                reply(
                    text("I'll look at your recent cells — the plot and the fix included."),
                    call(ids, "notebook_history", last=5),
                ),
                reply(text(diagnosis)),
            ],
        },
        {
            "prompt": CANVAS_PROMPTS[1],
            "responses": [
                reply(call(ids, "read_notebook", file_path="01_quickstart.ipynb")),
                reply(text(summary)),
            ],
        },
        {
            "prompt": CANVAS_PROMPTS[2],
            "responses": [
                reply(
                    text("I'll write both files."),
                    call(ids, "write_file", file_path="notes.md", content=notes),
                    call(ids, "write_file", file_path="per_unit.csv", content=per_unit_csv),
                ),
                reply(text(written)),
            ],
        },
    ]


# -- 07 co-authoring --------------------------------------------------------------------------

#: The tutorial's prompt; ``{{mode}}`` says whether the agent works in the notebook itself (a
#: frontend with the extension is connected) or proposes a cell (nbval, VS Code, a terminal).
COAUTHOR_PROMPT = (
    "Build a small analysis of data/sales.csv as notebook cells: load it, clean it, plot the "
    "monthly revenue, and conclude in Markdown. Work {{mode}}."
)
COAUTHOR_LOAD = 'import pandas as pd\n\nsales = pd.read_csv("data/sales.csv")\nsales.head()'
COAUTHOR_CLEAN = (
    "sales = sales.dropna()\n"
    'sales["month"] = pd.to_datetime(sales["month"])\n'
    'monthly = sales.groupby("month")["revenue"].sum()\n'
    "monthly.describe()"
)
COAUTHOR_PLOT = (
    "import matplotlib.pyplot as plt\n\n"
    'monthly.plot(title="Monthly revenue (€)", marker="o", figsize=(6, 2.5))\n'
    "plt.show()"
)


def coauthor_conclusion(rows: list[dict[str, Any]]) -> str:
    monthly = totals(rows, "month")
    months = sorted(monthly)
    best = max(months, key=lambda m: monthly[m])
    worst = min(months, key=lambda m: monthly[m])
    products = totals(rows, "product")
    top = max(products, key=lambda p: products[p])
    return (
        "## Conclusion\n\n"
        f"- Revenue totals **{eur(sum(monthly.values()))}** over {len(months)} months "
        f"({months[0]} to {months[-1]}).\n"
        f"- The best month is **{best}** ({eur(monthly[best])}), the weakest {worst} "
        f"({eur(monthly[worst])}): {pct(monthly[best], monthly[worst])} between them.\n"
        f"- **{top}** earns the most of the products ({eur(products[top])})."
    )


def inserted(call_block: Block) -> dict[str, str]:
    """The id of the cell ``call_block`` (an ``insert_cell``) inserted, as the replay finds it
    in that call's result in the running notebook: cell ids exist only there."""
    return {"$from_result": call_block["id"], "find": r"Inserted \w+ cell (\S+) \(at"}


def coauthoring() -> list[dict[str, Any]]:
    rows = sales()
    conclusion = coauthor_conclusion(rows)
    ids = Ids("CA")
    load = call(ids, "insert_cell", source=COAUTHOR_LOAD)
    run_load = call(ids, "run_cell", cell_id=inserted(load))
    clean = call(ids, "insert_cell", source=COAUTHOR_CLEAN)
    run_clean = call(ids, "run_cell", cell_id=inserted(clean))
    plot = call(ids, "insert_cell", source=COAUTHOR_PLOT)
    run_plot = call(ids, "run_cell", cell_id=inserted(plot))
    in_notebook = {
        "prompt": "Build a small analysis of data/sales.csv*Work `mode`*in the notebook*",
        "match": "pattern",
        "responses": [
            reply(text("I'll write the analysis as cells below this one and run each."), load),
            reply(run_load),
            reply(clean),
            reply(run_clean),
            reply(plot),
            reply(run_plot),
            reply(call(ids, "insert_cell", source=conclusion, cell_type="markdown")),
            reply(
                text(
                    "Four cells are below: load, clean and plot, each run with its output, and "
                    "the conclusion in Markdown."
                )
            ),
        ],
    }
    proposed = "\n\n".join([COAUTHOR_LOAD, COAUTHOR_CLEAN, COAUTHOR_PLOT])
    as_proposal = {
        "prompt": "Build a small analysis of data/sales.csv*Work `mode`*as a proposed cell*",
        "match": "pattern",
        "responses": [
            reply(
                text("No notebook frontend is connected, so I'll propose the code as one cell."),
                call(ids, "read_file", file_path="data/sales.csv", limit=3),
            ),
            reply(call(ids, "propose_cell", code=proposed)),
            reply(
                text(
                    "The code is in a new cell below this one; run it. My conclusion:\n\n"
                    + conclusion
                )
            ),
        ],
    }
    return [in_notebook, as_proposal]


# -- 08 serve -----------------------------------------------------------------------------------

SERVE_PROMPT = "While the server runs: which region in `sales` sold the most units, and how many?"


def serve_tutorial() -> list[dict[str, Any]]:
    ids = Ids("SV")
    units: dict[str, int] = defaultdict(int)
    for row in sales():
        units[row["region"]] += row["units"]
    ranked = sorted(units.items(), key=lambda item: -item[1])
    (top, top_units), (second, second_units) = ranked[0], ranked[1]
    answer = f"""
**{top}** sold the most: **{top_units:,} units** over the period, ahead of {second} \
({second_units:,}). All regions: {", ".join(f"{region} {count:,}" for region, count in ranked)}.
"""
    return [
        {
            "prompt": SERVE_PROMPT,
            "responses": [
                reply(
                    text("I'll look at the `sales` DataFrame in your kernel."),
                    call(ids, "inspect_variable", name="sales"),
                ),
                reply(text(answer)),
            ],
        }
    ]


# -- 09 while a cell runs -----------------------------------------------------------------------

BESIDE_PROMPT = "How is the loss doing?"
#: What the recorded model first tries: code, which is refused beside a running cell.
BESIDE_TREND = """\
import statistics
print(len(losses), statistics.mean(losses[:10]), statistics.mean(losses[-10:]))
"""


def while_running_tutorial() -> list[dict[str, Any]]:
    """Asked beside the tutorial's running loop, whose step the answer cannot know in advance:
    the answer says what holds at any step (the loss falls, the loop is not done)."""
    ids = Ids("WR")
    answer = """
**It is going down, as it should.** The values in `losses` fall steadily, with a little noise on \
top, and so do the progress lines your running cell has printed so far; none of them is NaN.

Your loop is still running, so this is the picture so far. I could not run code beside it to fit \
the trend; ask again once the cell has finished and I can.
"""
    return [
        {
            "prompt": BESIDE_PROMPT,
            "responses": [
                reply(
                    text("I'll compare the first ten losses with the latest ten."),
                    call(ids, "run_python", code=BESIDE_TREND),
                ),
                reply(
                    text(
                        "Your cell is still running, so I can't run code now. I'll read the "
                        "values and the output it has printed so far instead."
                    ),
                    call(ids, "inspect_variable", name="losses", max_chars=400),
                    call(ids, "notebook_history", last=1),
                ),
                reply(text(answer)),
            ],
        }
    ]


def main(out_dir: Path = HERE) -> None:
    cassettes = {
        "01_quickstart.json": quickstart(),
        "02_tools.json": tools(),
        "03_custom_tools.json": custom_tools(),
        "04_data_analysis.json": data_analysis(),
        "05_notebook_canvas.json": notebook_canvas(),
        "06_mcp.json": mcp_servers(),
        "07_coauthor.json": coauthoring(),
        "08_serve.json": serve_tutorial(),
        "09_while_running.json": while_running_tutorial(),
    }
    for name, exchanges in cassettes.items():
        save_cassette(out_dir / name, exchanges)
    print("wrote", ", ".join(cassettes), "in", out_dir)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
