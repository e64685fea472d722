"""Write the offline model's recorded sessions for the tutorials, with figures from the data.

No API key was at hand when the tutorials were written, so these cassettes are authored, not
recorded: each is a Claude-style session in the exact format ``RecordingProvider`` writes, whose
``tool_use`` calls run for real in the notebook and whose answers quote numbers computed here from
``notebooks/data`` (never typed in by hand). Re-record any of them against Claude with
``RecordingProvider`` (see ``cassettes/README.md``); rebuild them all with

    python notebooks/cassettes/make_cassettes.py
"""

from __future__ import annotations

import csv
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE.parent.parent))  # the repository, for the cassette writer

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


def call(ids: Ids, name: str, **arguments: Any) -> Block:
    return {"type": "tool_use", "id": ids(), "name": name, "input": arguments}


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
    return [first, second]


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


def main() -> None:
    save_cassette(HERE / "01_quickstart.json", quickstart())
    save_cassette(HERE / "02_tools.json", tools())
    save_cassette(HERE / "03_custom_tools.json", custom_tools())
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.json"))))


if __name__ == "__main__":
    main()
