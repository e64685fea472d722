"""The tutorial data is reproducible: ``make_data.py`` rebuilds the committed files byte for byte.

The offline model's recorded answers quote numbers computed from these files, so a silent change
to the data would make the tutorials say wrong things; this test catches it.
"""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "notebooks" / "data"


def test_make_data_rebuilds_the_committed_files_exactly(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(DATA / "make_data.py"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for name in ("sales.csv", "shop.sqlite"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


def test_sales_csv_has_a_year_of_monthly_rows_per_region_and_product() -> None:
    with (DATA / "sales.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["month", "region", "product", "units", "unit_price", "revenue"]
    assert len(rows) == 12 * 4 * 4
    assert {r["region"] for r in rows} == {"North", "South", "East", "West"}
    for row in rows:
        assert abs(int(row["units"]) * float(row["unit_price"]) - float(row["revenue"])) < 0.01


def test_shop_sqlite_orders_reference_real_customers_and_products() -> None:
    db = sqlite3.connect(f"file:{DATA / 'shop.sqlite'}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"customers", "products", "orders"}
        orphans = db.execute(
            "SELECT COUNT(*) FROM orders o LEFT JOIN customers c ON c.id = o.customer_id "
            "LEFT JOIN products p ON p.id = o.product_id WHERE c.id IS NULL OR p.id IS NULL"
        ).fetchone()[0]
        assert orphans == 0
        assert db.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 150
    finally:
        db.close()
