"""Connection methods that configure how types are encoded and decoded."""
from __future__ import annotations

from typing import Any, Callable

from mypgdriver import exceptions
from mypgdriver.codecs import base, pg_types
from mypgdriver.codecs.usercodec import make_user_codec


class TypeCodecsMixin:
    """set_type_codec() and friends (part of Connection)."""

    __slots__ = ()

    async def set_type_codec(self, typename: str, *, schema: str = 'public',
                             encoder: Callable[[Any], Any], decoder: Callable[[Any], Any],
                             format: str = 'text') -> None:
        """Use `encoder`/`decoder` for values of the given type (asyncpg semantics).

        `format` is the form the callables exchange: ``'text'`` (str),
        ``'binary'`` (bytes) or ``'tuple'`` (date, time, timetz, timestamp,
        timestamptz, interval and composite types).  The codec also applies
        inside arrays, composites and domains of the type.
        """
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        if info.category == 'A' or info.kind in ('r', 'm', 'p'):
            raise exceptions.UnsupportedClientFeatureError(
                f'custom codecs on {_kind_label(info)} types are not supported '
                f'({info.schema}.{info.name}); set a codec on the element type instead')
        core = self._session.codecs.get_codec(info.oid)
        codec = make_user_codec(info.oid, info.name, info.schema, format, encoder, decoder, core)
        self._session.codecs.set_override(info.oid, codec)
        self._session.stmt_cache.clear()

    async def reset_type_codec(self, typename: str, *, schema: str = 'public') -> None:
        """Undo set_type_codec()/set_builtin_type_codec() for the type."""
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        self._session.codecs.remove_override(info.oid)
        self._session.stmt_cache.clear()

    async def set_builtin_type_codec(self, typename: str, *, schema: str = 'public',
                                     codec_name: str, format: str | None = None) -> None:
        """Exchange values of the type as if it were the built-in type `codec_name`.

        For extension types that are wire-compatible with a built-in one
        (e.g. a type whose binary form is that of ``text`` or ``int4``).
        """
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        name = codec_name.split('.')[-1]
        builtin_oid = pg_types.BY_NAME.get(name)
        builtin = base.builtin_codecs().get(builtin_oid) if builtin_oid is not None else None
        if builtin is None:
            raise ValueError(f'unknown built-in codec {codec_name!r}')
        if format is not None and format != ('binary' if builtin.format == base.FORMAT_BINARY_PY
                                              else 'text'):
            raise ValueError(f'the built-in codec {codec_name!r} does not support format {format!r}')
        codec = base.clone_codec(builtin, info.oid, info.name, info.schema, builtin.kind)
        self._session.codecs.set_override(info.oid, codec)
        self._session.stmt_cache.clear()

    async def _type_info_by_name(self, typename: str, schema: str):
        rows = await self.fetch(
            'SELECT t.oid FROM pg_catalog.pg_type t '
            'JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace '
            'WHERE t.typname = $1 AND n.nspname = $2', typename, schema)
        if rows:
            oid = rows[0][0]
        else:
            oid = None
            if schema == 'public':
                # Standard SQL spellings ('character varying', 'int') exist
                # only as regtype input, resolved through the search path.
                # Other schemas must match exactly: a bare name could pick a
                # type from somewhere else.
                try:
                    oid = await self.fetchval(
                        'SELECT pg_catalog.to_regtype($1)::pg_catalog.oid', typename)
                except exceptions.PostgresSyntaxError:
                    oid = None
            if oid is None:
                raise ValueError(f'unknown type: {schema}.{typename}')
        info = self._session.codecs.type_info(oid)
        if info is None:
            await self._session.introspect_types([oid], None)
            info = self._session.codecs.type_info(oid)
        return info


def _kind_label(info) -> str:
    if info.category == 'A':
        return 'array'
    return {'r': 'range', 'm': 'multirange', 'p': 'pseudo'}.get(info.kind, info.kind)
