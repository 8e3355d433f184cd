#!/usr/bin/env python3
"""Runs docs/fleet.md's fleet queries in DuckDB and in Apache Spark (local mode) over the same
hive-partitioned Parquet tree and compares the answers.

Usage: compare.py FLEET_DIR DOC [--show]

FLEET_DIR is a tree as scripts/fleet/example.sh writes it
(FLEET_DIR/host=H/date=D/run=R/<table>.parquet). From DOC (docs/fleet.md) it takes:
  * the block after <!-- fleet-views-duckdb -->: the DuckDB views (the path 'fleet/' in it is
    replaced by FLEET_DIR's name, the script running in FLEET_DIR's parent);
  * every SQL block after <!-- fleet-query: NAME -->: run as is in both engines, against
    views of the same names (Spark's are made as docs/fleet.md shows: spark.read with
    basePath, createOrReplaceTempView).
Rows are compared as sorted lists (floats to 9 significant digits, dates as ISO text). One
Spark session runs every query. Prints one JSON line per query ({"query", "rows",
"duckdb_s", "spark_s"}; with --show the rows too); exits 1 when an answer differs or a
query returns no rows.
"""

import datetime
import decimal
import json
import os
import re
import sys
import time

TABLES = ["samples", "stacks", "frames", "functions", "mappings"]


def blocks(doc):
    text = open(doc, encoding="utf-8").read()
    views = re.search(r"<!-- fleet-views-duckdb -->\s*```sql\n(.*?)```", text, re.S)
    if not views:
        raise SystemExit(f"{doc}: no <!-- fleet-views-duckdb --> block")
    queries = re.findall(r"<!-- fleet-query: ([\w-]+) -->\s*```sql\n(.*?)```", text, re.S)
    if not queries:
        raise SystemExit(f"{doc}: no <!-- fleet-query: NAME --> blocks")
    return views.group(1), queries


def norm_value(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        v = float(v)
    if isinstance(v, float):
        if v == int(v) and abs(v) < 2**53:
            return int(v)
        return float(f"{v:.9g}")
    return v


def norm(rows):
    return sorted((tuple(norm_value(v) for v in r) for r in rows), key=repr)


def spark_session():
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("profkit-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_views(spark, fleet):
    # As docs/fleet.md shows: partition columns host, date, run from the directory names.
    for t in TABLES:
        (spark.read.option("basePath", fleet)
              .parquet(f"{fleet}/host=*/date=*/run=*/{t}.parquet")
              .createOrReplaceTempView(t))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    fleet = os.path.abspath(argv[0])
    doc = os.path.abspath(argv[1])
    show = "--show" in argv[2:]
    views, queries = blocks(doc)

    import duckdb

    os.chdir(os.path.dirname(fleet))
    con = duckdb.connect()
    con.execute(views.replace("'fleet/", f"'{os.path.basename(fleet)}/"))

    spark = spark_session()
    try:
        spark_views(spark, fleet)
        failed = False
        for name, sql in queries:
            t0 = time.monotonic()
            d_rows = norm(con.execute(sql).fetchall())
            t1 = time.monotonic()
            s_rows = norm(tuple(r) for r in spark.sql(sql).collect())
            t2 = time.monotonic()
            out = {"query": name, "rows": len(d_rows), "duckdb_s": round(t1 - t0, 3),
                   "spark_s": round(t2 - t1, 3)}
            if show:
                out["duckdb"] = d_rows
            print(json.dumps(out, default=str), flush=True)
            if not d_rows:
                print(f"compare.py: {name}: no rows", file=sys.stderr)
                failed = True
            if d_rows != s_rows:
                failed = True
                print(f"compare.py: {name}: DuckDB and Spark differ", file=sys.stderr)
                only_d = [r for r in d_rows if r not in s_rows][:10]
                only_s = [r for r in s_rows if r not in d_rows][:10]
                print(f"  only in DuckDB: {only_d}\n  only in Spark:  {only_s}", file=sys.stderr)
        return 1 if failed else 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
