"""Make the small data sets the tutorials use: ``sales.csv`` and ``shop.sqlite``.

Both files are committed, so the notebooks (and the recorded offline answers, whose numbers come
from these files) never depend on running this script; it is here so anyone can see where the data
came from and rebuild it byte for byte. Only the standard library is used, with a fixed seed.

    python notebooks/data/make_data.py        # rewrites both files next to this script
    python notebooks/data/make_data.py DIR    # writes them into DIR instead
"""

from __future__ import annotations

import csv
import random
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20240601

MONTHS = [f"2024-{m:02d}" for m in range(1, 13)]
REGIONS = ["North", "South", "East", "West"]
# product -> (unit price in EUR, typical monthly units per region)
PRODUCTS = {
    "Widget": (12.50, 140),
    "Gadget": (39.00, 55),
    "Gizmo": (74.90, 22),
    "Doohickey": (5.25, 310),
}
# how strong each region sells, and how it trends over the year (per month)
REGION_SCALE = {"North": 1.00, "South": 0.85, "East": 1.20, "West": 0.70}
REGION_TREND = {"North": 0.000, "South": 0.010, "East": -0.004, "West": 0.035}
# a little seasonality: a summer dip and a strong December
SEASON = [0.92, 0.90, 0.98, 1.00, 1.02, 0.95, 0.88, 0.90, 1.02, 1.06, 1.14, 1.35]


def sales_rows(rng: random.Random) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for month_index, month in enumerate(MONTHS):
        for region in REGIONS:
            for product, (price, base_units) in PRODUCTS.items():
                trend = 1.0 + REGION_TREND[region] * month_index
                expected = base_units * REGION_SCALE[region] * trend * SEASON[month_index]
                units = max(0, round(rng.gauss(expected, expected * 0.12)))
                rows.append(
                    {
                        "month": month,
                        "region": region,
                        "product": product,
                        "units": units,
                        "unit_price": f"{price:.2f}",
                        "revenue": f"{units * price:.2f}",
                    }
                )
    return rows


def write_sales_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


FIRST_NAMES = [
    "Ada",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Luca",
    "Maya",
    "Nils",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
]
CITIES = {"North": "Hamburg", "South": "Munich", "East": "Berlin", "West": "Cologne"}
CATEGORIES = {
    "Widget": "hardware",
    "Gadget": "electronics",
    "Gizmo": "electronics",
    "Doohickey": "accessories",
    "Thingamajig": "hardware",
}
SHOP_PRICES = {
    "Widget": 12.50,
    "Gadget": 39.00,
    "Gizmo": 74.90,
    "Doohickey": 5.25,
    "Thingamajig": 19.95,
}


def write_shop_sqlite(path: Path, rng: random.Random) -> None:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        db.executescript(
            """
            CREATE TABLE customers (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                city TEXT NOT NULL,
                region TEXT NOT NULL,
                joined TEXT NOT NULL            -- ISO date
            );
            CREATE TABLE products (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                category TEXT NOT NULL,
                price REAL NOT NULL             -- EUR
            );
            CREATE TABLE orders (
                id INTEGER PRIMARY KEY,
                customer_id INTEGER NOT NULL REFERENCES customers(id),
                product_id INTEGER NOT NULL REFERENCES products(id),
                quantity INTEGER NOT NULL,
                ordered_at TEXT NOT NULL        -- ISO date
            );
            """
        )
        for product_id, (name, price) in enumerate(SHOP_PRICES.items(), start=1):
            db.execute(
                "INSERT INTO products VALUES (?, ?, ?, ?)",
                (product_id, name, CATEGORIES[name], price),
            )
        for customer_id, name in enumerate(FIRST_NAMES, start=1):
            region = REGIONS[(customer_id - 1) % len(REGIONS)]
            joined = f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            db.execute(
                "INSERT INTO customers VALUES (?, ?, ?, ?, ?)",
                (customer_id, name, CITIES[region], region, joined),
            )
        # a few customers order a lot, most order a little
        weights = [rng.paretovariate(1.6) for _ in FIRST_NAMES]
        for order_id in range(1, 151):
            customer_id = rng.choices(range(1, len(FIRST_NAMES) + 1), weights=weights)[0]
            product_id = rng.choices(range(1, len(SHOP_PRICES) + 1), weights=[5, 3, 1, 6, 2])[0]
            quantity = rng.randint(1, 6)
            ordered_at = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            db.execute(
                "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                (order_id, customer_id, product_id, quantity, ordered_at),
            )
        db.commit()
        db.execute("VACUUM")
    finally:
        db.close()


def main(out_dir: Path = HERE) -> None:
    rng = random.Random(SEED)
    write_sales_csv(out_dir / "sales.csv", sales_rows(rng))
    write_shop_sqlite(out_dir / "shop.sqlite", rng)
    print(f"wrote {out_dir / 'sales.csv'} and {out_dir / 'shop.sqlite'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
