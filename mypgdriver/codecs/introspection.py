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

from mypgdriver.codecs.registry import CodecRegistry, TypeInfo

# The codecs of the driver's own catalog queries: built-in ones only, so that
# set_type_codec() on oid, text or "char" never changes what the driver
# reads about types (asyncpg's ignore_custom_codec).  Its generation (-1) is
# one that no connection's registry reaches, which marks a statement whose
# codecs came from here.
CATALOG_CODECS = CodecRegistry()
CATALOG_CODECS.generation = -1

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

# A type by name, for set_type_codec() and friends: $1 the name as given,
# $2 the schema, $3 its SQL spelling (sql_type_spelling()), $4 true when the
# name is an SQL alias ('int', 'char'), $5 true to fall back to the types on
# search_path (the default schema, 'public').  The SQL spellings are what
# format_type() prints ('smallint', 'double precision', 'character varying',
# 'timestamp with time zone'), so the server's own catalog resolves them,
# and nothing here can raise an error (to_regtype() raises on a syntax
# error, which would abort the application's transaction).  Ranking: the
# asked schema first, then the exact name (unless it is an alias: 'char' is
# character, as in a cast, not "char"), then the spelling.
TYPE_BY_NAME = """
SELECT t.oid
FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE (n.nspname = $2 OR ($5 AND pg_catalog.pg_type_is_visible(t.oid)))
  AND (t.typname = $1 OR t.typname = $3 OR pg_catalog.format_type(t.oid, NULL) = $3)
ORDER BY n.nspname = $2 DESC, (t.typname = $1 AND NOT $4) DESC,
         pg_catalog.format_type(t.oid, NULL) = $3 DESC, t.oid
LIMIT 1
"""

# Type names of PostgreSQL's grammar that format_type() never prints
# (PostgreSQL docs, "Data Types", Table 8.1, and the asyncpg spellings of
# the time zone types), mapped to the names it does print.
_SQL_ALIASES = {
    'int': 'integer',
    'dec': 'numeric',
    'decimal': 'numeric',
    'float': 'double precision',
    'char': 'character',
    'char varying': 'character varying',
    'national character': 'character',
    'national character varying': 'character varying',
    'time with timezone': 'time with time zone',
    'time without timezone': 'time without time zone',
    'timestamp with timezone': 'timestamp with time zone',
    'timestamp without timezone': 'timestamp without time zone',
}


def sql_type_spelling(typename: str) -> tuple[str, bool]:
    """How format_type() would print `typename`, and whether it is an alias.

    Unquoted names fold to lower case and single spaces, as the server reads
    them; a name with double quotes is taken as written ('"char"').
    """
    if '"' in typename:
        return typename.strip(), False
    key = ' '.join(typename.lower().split())
    alias = _SQL_ALIASES.get(key)
    return (alias, True) if alias is not None else (key, False)


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
