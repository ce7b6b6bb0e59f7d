"""The catalog query that teaches the registry about types it does not know.

One query per statement that has unknown type OIDs, whatever their number:
it must stay cheap, also under the planner's eyes: the recursive CTE's row
estimate grows tenfold per level, and the per-row catalog subqueries of the
final SELECT multiplied by it pushed the estimated cost past jit_above_cost
(JIT compilation: ~35-57 ms, and over 300 ms with optimisation, for a query
that runs in about 1 ms).  Selecting DISTINCT from the CTE (its rows are
distinct anyway) gives the planner a small estimate and keeps JIT out.
it follows array elements, domain base types, range subtypes, multirange
ranges and composite fields recursively, so that a nested user type is
resolved in one round trip.  Built-in types never get here.
"""
from __future__ import annotations

from mypgdriver.codecs.registry import TypeInfo

# With DISTINCT, the estimated cost grows about 1,400 per input OID (measured
# on PostgreSQL 15: 1 OID 9.9K, 7 OIDs 22.7K, 30 OIDs 71K, 100 OIDs 140K);
# 25 keeps a query well under the default jit_above_cost of 100,000.
MAX_OIDS_PER_QUERY = 25

_DEPENDENCIES = """
        SELECT t.typelem WHERE t.typcategory = 'A' AND t.typelem <> 0
        UNION ALL SELECT t.typbasetype WHERE t.typbasetype <> 0
        UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
        {multirange_dep}
        UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
            WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0
              AND NOT a.attisdropped
"""

_QUERY = """
WITH RECURSIVE deps(oid) AS (
    SELECT unnest($1::pg_catalog.oid[])
  UNION
    SELECT d.dep FROM deps
    JOIN pg_catalog.pg_type t ON t.oid = deps.oid
    CROSS JOIN LATERAL ({dependencies}) AS d(dep)
)
SELECT t.oid, t.typname::text, n.nspname::text, t.typtype, t.typcategory,
       CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE 0::pg_catalog.oid END,
       t.typbasetype,
       coalesce(r.rngsubtype, 0::pg_catalog.oid),
       {multirange_col},
       t.typdelim,
       CASE WHEN t.typrelid <> 0 THEN ARRAY(
           SELECT a.attname::text FROM pg_catalog.pg_attribute a
           WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
           ORDER BY a.attnum) END,
       CASE WHEN t.typrelid <> 0 THEN ARRAY(
           SELECT a.atttypid FROM pg_catalog.pg_attribute a
           WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
           ORDER BY a.attnum) END
FROM (SELECT DISTINCT oid FROM deps) AS found
JOIN pg_catalog.pg_type t ON t.oid = found.oid
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid
"""

_TYPE_BY_NAME = """
SELECT t.oid FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.typname = $1 AND n.nspname = $2
"""


def introspection_query(server_version_num: int) -> str:
    """The query for this server (multiranges exist from PostgreSQL 14 on)."""
    if server_version_num >= 140000:
        dep = ('UNION ALL SELECT m.rngtypid FROM pg_catalog.pg_range m '
               'WHERE m.rngmultitypid = t.oid')
        col = ('coalesce((SELECT m.rngtypid FROM pg_catalog.pg_range m '
               'WHERE m.rngmultitypid = t.oid), 0::pg_catalog.oid)')
    else:
        dep = ''
        col = '0::pg_catalog.oid'
    return _QUERY.format(dependencies=_DEPENDENCIES.format(multirange_dep=dep),
                         multirange_col=col)


def type_by_name_query() -> str:
    return _TYPE_BY_NAME


def _char(value) -> str:
    # "char" columns decode to bytes (as in asyncpg).
    return value.decode('ascii') if isinstance(value, bytes) else value


def rows_to_type_info(rows) -> list[TypeInfo]:
    """Turn the introspection query's rows into TypeInfo."""
    return [
        TypeInfo(oid=row[0], name=row[1], schema=row[2], kind=_char(row[3]),
                 category=_char(row[4]), element=row[5], base=row[6], range_subtype=row[7],
                 multirange_of=row[8], delimiter=_char(row[9]), field_names=tuple(row[10] or ()),
                 field_oids=tuple(row[11] or ()))
        for row in rows
    ]
