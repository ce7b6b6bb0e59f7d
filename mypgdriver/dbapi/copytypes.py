"""The codecs of a binary COPY's columns from the types given to Copy.set_types().

A COPY in progress holds the connection, so nothing can be asked of the
server: a type is found from what the client knows.  That is every built-in
type (by OID, by its ``pg_type`` name such as ``'int4'`` or ``'timestamptz'``,
or by an SQL spelling such as ``'integer'``, ``'double precision'``,
``'timestamp with time zone'``; ``'name[]'`` or ``'_name'`` for its array),
and the other types the connection has already met (a query that returned
or took one introspected it), by OID or by ``'schema.name'`` (``public``
when no schema is given).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence, Union

from mypgdriver.codecs import base, pg_types
from mypgdriver.codecs.introspection import sql_type_spelling
from mypgdriver.exceptions import pep249

if TYPE_CHECKING:
    from mypgdriver.codecs.base import Codec
    from mypgdriver.codecs.registry import CodecRegistry

__all__ = ('TypeSpec', 'copy_codecs')

#: A type as set_types() takes it: its name, or its OID.
TypeSpec = Union[str, int]

# format_type()'s spellings of built-in types whose pg_type name differs
# (PostgreSQL docs, "Data Types", Table 8.1).
_SQL_NAMES = {
    'smallint': 'int2',
    'integer': 'int4',
    'bigint': 'int8',
    'real': 'float4',
    'double precision': 'float8',
    'boolean': 'bool',
    'character': 'bpchar',
    'character varying': 'varchar',
    'bit varying': 'varbit',
    'time without time zone': 'time',
    'time with time zone': 'timetz',
    'timestamp without time zone': 'timestamp',
    'timestamp with time zone': 'timestamptz',
    '"char"': 'char',
}

# A type modifier ('varchar(20)', 'numeric(10, 2)', 'timestamp(3) with
# time zone'): it does not change the binary form.
_TYPMOD = re.compile(r'\s*\([\d\s,]*\)')


def copy_codecs(types: Sequence[TypeSpec], registry: CodecRegistry,
                binary: bool) -> tuple[tuple[Codec, ...], tuple[str, ...]]:
    """The codec and the name of each of `types` (see the module docstring).

    ProgrammingError for a type that is not known; NotSupportedError, for
    a binary COPY, for a type the driver has no binary codec for.
    """
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence):
        raise pep249.ProgrammingError(
            "set_types() takes a sequence of type names or OIDs, e.g. ['int4', 'text']")
    codecs: list[Codec] = []
    names: list[str] = []
    for spec in types:
        oid = _type_oid(spec, registry)
        codec = registry.get_codec(oid)
        info = registry.type_info(oid)
        name = info.name if info is not None else str(spec)
        if binary and codec.format != base.FORMAT_BINARY_PY:
            raise pep249.NotSupportedError(
                f'type {name} (oid {oid}) has no binary codec in this driver: copy it in '
                f"the text format (no FORMAT BINARY), or cast it from a column of another type")
        codecs.append(codec)
        names.append(name)
    return tuple(codecs), tuple(names)


def _type_oid(spec: TypeSpec, registry: CodecRegistry) -> int:
    if isinstance(spec, int) and not isinstance(spec, bool):
        if registry.type_info(spec) is None:
            raise pep249.ProgrammingError(
                f'set_types(): no type with OID {spec} is known on this connection (a type '
                f'that is not built in is known once a query has used it)')
        return spec
    if not isinstance(spec, str):
        raise pep249.ProgrammingError(
            f'set_types() takes type names or OIDs, not {type(spec).__name__}')
    oid = _oid_by_name(spec, registry)
    if oid is None:
        raise pep249.ProgrammingError(
            f'set_types(): unknown type {spec!r} (give a built-in type such as \'int4\' or '
            f'\'timestamptz[]\', or a type the connection has already used, as '
            f'\'schema.name\' or by its OID)')
    return oid


def _oid_by_name(spec: str, registry: CodecRegistry) -> int | None:
    text = _TYPMOD.sub('', spec).strip()
    array = text.endswith('[]')
    if array:
        text = text[:-2].rstrip()
    schema, dot, name = text.rpartition('.') if '"' not in text else ('', '', text)
    if not dot:
        schema = ''
    if not name:
        return None
    if '"' not in text:
        schema, name = schema.lower(), name.lower()     # as the server folds them
    if not schema or schema == 'pg_catalog':
        key, _aliased = sql_type_spelling(name)
        builtin = _SQL_NAMES.get(key, key.strip('"'))
        if array and not builtin.startswith('_'):
            builtin = '_' + builtin
        oid = pg_types.BY_NAME.get(builtin)
        if oid is not None:
            return oid
        if schema:
            return None
    info = registry.type_by_name(('_' + name) if array else name, schema or 'public')
    return info.oid if info is not None else None
