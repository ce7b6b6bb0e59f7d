"""The benchmark's workloads: one table of what each one sends and expects.

Every driver module reads the same `Workload` objects, so the SQL, the
parameters and the data are identical for all drivers; only the way each
driver sends them differs. Adding a scenario is adding one entry to
`WORKLOADS` (and, if it is a new `kind`, one builder per driver).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

# What a driver is asked to do with a workload. Each driver module has one
# builder per kind.
Kind = Literal["fetch", "copy", "batch", "cursor"]

TABLE_PREFIX = "mypgdriver_bench_"

# How many rows a cursor fetches per round trip. Every driver gets the same
# value: asyncpg's default (50) and psycopg's (100) would otherwise measure
# their defaults rather than their speed.
CURSOR_BATCH = 2000


@dataclass(frozen=True)
class Workload:
    """One benchmark scenario.

    `sql` uses PostgreSQL's `$n` placeholders; drivers that want `%s` use
    `pyformat_sql`. `rows` is the number of rows one iteration returns (fetch,
    cursor) or sends (copy, batch); `None` means it depends on the server
    (pg_type) and is counted once before the run.
    """

    name: str
    description: str
    kind: Kind
    sql: str = ""
    args: tuple[Any, ...] = ()
    rows: int | None = None
    setup: tuple[str, ...] = ()
    teardown: tuple[str, ...] = ()
    # copy and batch: the target table, its columns and their types (psycopg's
    # binary COPY needs the types), and the records sent per iteration.
    table: str = ""
    columns: tuple[str, ...] = ()
    column_types: tuple[str, ...] = ()
    records: list[tuple[Any, ...]] = field(default_factory=list, repr=False)
    # pgbench cannot send COPY data; such workloads have no C floor.
    pgbench: bool = True

    @property
    def pyformat_sql(self) -> str:
        """`sql` with `$n` replaced by `%s`, for the DB-API drivers.

        Our statements use each parameter once and in order, which is what
        makes this plain substitution correct.
        """
        return re.sub(r"\$\d+", "%s", self.sql.replace("%", "%%"))

    @property
    def literal_sql(self) -> str:
        """`sql` with its arguments inlined as SQL literals (for psql and pgbench)."""
        return re.sub(r"\$(\d+)", lambda m: sql_literal(self.args[int(m.group(1)) - 1]), self.sql)


def sql_literal(value: Any) -> str:
    """Render a benchmark argument as an SQL literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def _table(name: str) -> str:
    return TABLE_PREFIX + name


_COPY_TABLE = _table("copy")
_COPY_COLUMNS = ("a", "b", "c", "d", "e", "f", "g")
_COPY_TYPES = ("int4", "int4", "int4", "text", "float8", "int4", "text")
_COPY_DDL = (
    f"CREATE TABLE {_COPY_TABLE} "
    "(a int, b int, c int, d text, e float8, f int, g text)"
)
_COPY_RECORD = (10, 11, 10, "TESTTESTTEST", 10.333, 12341234, "123412341234")

_BLOBS = _table("blobs")
_ARRAYS = _table("arrays")
_WIDE = _table("wide")

# 20 columns covering the types applications read most; values vary per
# row so no codec can get away with caching one value.
_WIDE_DDL = f"""
CREATE TABLE {_WIDE} (
    id int PRIMARY KEY, small smallint, big bigint, flag boolean,
    ratio real, score double precision, price numeric(12, 2), name text,
    code varchar(16), grade char(1), created timestamptz, day date,
    at_time time, span interval, uid uuid, doc jsonb, tags text[],
    payload bytea, addr inet, counts int4[]
)"""
_WIDE_FILL = f"""
INSERT INTO {_WIDE}
SELECT i, i % 32000, i * 1000003, i % 2 = 0,
       i / 7.0, i * 3.14159, i * 12.34, 'name number ' || i,
       'C' || i, chr(65 + i % 26), timestamptz '2024-01-01 00:00+00' + i * interval '1 hour',
       date '2024-01-01' + i, time '08:00' + i * interval '1 minute', i * interval '1 second',
       md5(i::text)::uuid, jsonb_build_object('id', i, 'tags', jsonb_build_array('a', 'b'), 'ok', true),
       ARRAY['alpha', 'beta', 'gamma' || i], decode(md5(i::text), 'hex'),
       ('10.0.' || i % 256 || '.' || i % 200)::inet, ARRAY[i, i + 1, i + 2, i + 3]
FROM generate_series(1, 100) AS i"""

WORKLOADS: list[Workload] = [
    Workload(
        name="pg_type",
        description="a typical application query: 12 columns of the catalog",
        kind="fetch",
        sql=(
            "SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, "
            "typispreferred, typisdefined, typdelim, typrelid, typelem, typarray "
            "FROM pg_type WHERE typtypmod = $1 AND typisdefined = $2"
        ),
        args=(-1, True),
    ),
    Workload(
        name="generate_series",
        description="1,000 rows of one integer: per-row overhead",
        kind="fetch",
        sql="SELECT i FROM generate_series(1, $1) AS i",
        args=(1000,),
        rows=1000,
    ),
    Workload(
        name="large_object",
        description="100 rows of a 1 KB bytea: the buffer and I/O path",
        kind="fetch",
        sql=f"SELECT data FROM {_BLOBS}",
        rows=100,
        setup=(
            f"CREATE TABLE {_BLOBS} (data bytea)",
            f"INSERT INTO {_BLOBS} SELECT decode(repeat(md5(i::text), 64), 'hex') "
            "FROM generate_series(1, 100) AS i",
        ),
        teardown=(f"DROP TABLE IF EXISTS {_BLOBS}",),
    ),
    Workload(
        name="arrays",
        description="100 rows of an int4[] of 100 elements: array decoding",
        kind="fetch",
        sql=f"SELECT a FROM {_ARRAYS}",
        rows=100,
        setup=(
            f"CREATE TABLE {_ARRAYS} (a int4[])",
            f"INSERT INTO {_ARRAYS} SELECT ARRAY(SELECT i * j FROM generate_series(1, 100) AS j) "
            "FROM generate_series(1, 100) AS i",
        ),
        teardown=(f"DROP TABLE IF EXISTS {_ARRAYS}",),
    ),
    Workload(
        name="copyfrom",
        description="COPY 10,000 rows of 7 columns into a table",
        kind="copy",
        rows=10_000,
        table=_COPY_TABLE,
        columns=_COPY_COLUMNS,
        column_types=_COPY_TYPES,
        records=[_COPY_RECORD] * 10_000,
        setup=(_COPY_DDL,),
        teardown=(f"DROP TABLE IF EXISTS {_COPY_TABLE}",),
        pgbench=False,
    ),
    Workload(
        name="batch",
        description="executemany of 1,000 INSERTs of 7 columns",
        kind="batch",
        sql=f"INSERT INTO {_COPY_TABLE} (a, b, c, d, e, f, g) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        rows=1000,
        table=_COPY_TABLE,
        columns=_COPY_COLUMNS,
        column_types=_COPY_TYPES,
        records=[_COPY_RECORD] * 1000,
        setup=(_COPY_DDL,),
        teardown=(f"DROP TABLE IF EXISTS {_COPY_TABLE}",),
    ),
    Workload(
        name="oneplusone",
        description="SELECT 1+1: the round-trip latency",
        kind="fetch",
        sql="SELECT 1+1",
        rows=1,
    ),
    Workload(
        name="wide_row",
        description="100 rows of 20 mixed columns (timestamptz, numeric, uuid, jsonb, text[], ...)",
        kind="fetch",
        sql=f"SELECT * FROM {_WIDE} WHERE id <= $1",
        args=(100,),
        rows=100,
        setup=(_WIDE_DDL, _WIDE_FILL),
        teardown=(f"DROP TABLE IF EXISTS {_WIDE}",),
    ),
    Workload(
        name="cursor_stream",
        description=f"100,000 rows streamed through a cursor, {CURSOR_BATCH} per round trip",
        kind="cursor",
        sql="SELECT i, 'row ' || i AS label, i * 0.5::float8 AS half FROM generate_series(1, $1) AS i",
        args=(100_000,),
        rows=100_000,
    ),
]

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}
