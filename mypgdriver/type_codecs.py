"""Connection methods that configure how types are encoded and decoded."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar, cast

from mypgdriver import exceptions
from mypgdriver.codecs import base, introspection, pg_types, registry
from mypgdriver.codecs.usercodec import make_user_codec

if TYPE_CHECKING:
    from mypgdriver.core.session import Session


_F = TypeVar('_F', bound=Callable[..., Awaitable[Any]])


def _in_line(method: _F) -> _F:
    """Run a codec method in the caller's place in line (see Admission.enter_line()).

    Its catalog lookups are round trips before the registry changes: calls
    made after it wait, so they run with the codec it sets.
    """
    @functools.wraps(method)
    async def in_line(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._session.check_open()
        async with self._session.admission.line():
            return await method(self, *args, **kwargs)
    return cast(_F, in_line)


class TypeCodecsMixin:
    """set_type_codec() and friends (part of Connection)."""

    __slots__ = ()

    # Connection's, declared without a value so that type checkers know it.
    _session: Session

    @_in_line
    async def set_type_codec(self, typename: str, *, schema: str = 'public',
                             encoder: Callable[[Any], Any], decoder: Callable[[Any], Any],
                             format: str = 'text') -> None:
        """Use `encoder`/`decoder` for values of the given type (asyncpg semantics).

        `format` is the form the callables exchange: ``'text'`` (str),
        ``'binary'`` (bytes) or ``'tuple'`` (date, time, timetz, timestamp,
        timestamptz, interval and composite types).  The codec also applies
        inside arrays, composites and domains of the type.

        A domain cannot have a codec of its own: the server describes result
        columns of a domain type by the domain's base type, so a codec keyed
        by the domain would never be used for results.  Set it on the base
        type instead (it then applies to the domain's values as well).
        """
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        if info.kind == 'd':
            base_info = self._session.codecs.type_info(info.base)
            base_name = (f'{base_info.schema}.{base_info.name}' if base_info is not None
                         else 'its base type')
            raise exceptions.UnsupportedClientFeatureError(
                f'cannot set a codec on the domain type {info.schema}.{info.name}: '
                f'query results carry values of a domain as its base type, so a codec '
                f'on the domain would never decode them; set the codec on the base '
                f'type ({base_name}) instead')
        if info.category == 'A' or info.kind in ('r', 'm', 'p'):
            raise exceptions.UnsupportedClientFeatureError(
                f'custom codecs on {_kind_label(info)} types are not supported '
                f'({info.schema}.{info.name}); set a codec on the element type instead')
        core = self._session.codecs.get_codec(info.oid)
        codec = make_user_codec(info.oid, info.name, info.schema, format, encoder, decoder, core)
        self._session.codecs.set_override(info.oid, codec)
        self._session.statements.cache.clear()

    @_in_line
    async def reset_type_codec(self, typename: str, *, schema: str = 'public') -> None:
        """Undo set_type_codec()/set_builtin_type_codec() for the type."""
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        self._session.codecs.remove_override(info.oid)
        self._session.statements.cache.clear()

    @_in_line
    async def set_builtin_type_codec(self, typename: str, *, schema: str = 'public',
                                     codec_name: str, format: str | None = None) -> None:
        """Exchange values of the type with one of the driver's own codecs (asyncpg semantics).

        `codec_name` is a built-in type (``'int4'``, ``'integer'``,
        ``'pg_catalog.text'``), for an extension type whose wire form is that
        type's, or ``'pg_contrib.hstore'``: hstore values as :class:`dict`
        (``str`` keys, ``str`` or ``None`` values).
        """
        self._session.check_open()
        info = await self._type_info_by_name(typename, schema)
        builtin = await self._builtin_codec_named(codec_name)
        builtin_format = 'binary' if builtin.format == base.FORMAT_BINARY_PY else 'text'
        if format is not None and format != builtin_format:
            raise exceptions.ClientConfigurationError(
                f'the built-in codec {codec_name!r} exchanges values in {builtin_format} '
                f'format, not {format!r}')
        codec = base.clone_codec(builtin, info.oid, info.name, info.schema, builtin.kind)
        self._session.codecs.set_override(info.oid, codec)
        self._session.statements.cache.clear()

    async def _builtin_codec_named(self, codec_name: str):
        prefix, _, name = codec_name.rpartition('.')
        if prefix == 'pg_contrib':
            codec = registry.CONTRIB_CODECS.get(name)
        elif prefix in ('', 'pg_catalog'):
            oid = pg_types.BY_NAME.get(name)
            if oid is None:
                # SQL spellings ('integer', 'double precision'), from the catalog.
                oid = await self._type_oid_by_name(name, 'pg_catalog')
            codec = base.builtin_codecs().get(oid)
        else:
            codec = None
        if codec is None:
            raise exceptions.ClientConfigurationError(
                f'unknown built-in codec {codec_name!r} (expected a built-in type name such '
                f'as \'int4\' or \'text\', or one of: '
                f'{", ".join("pg_contrib." + n for n in sorted(registry.CONTRIB_CODECS))})')
        return codec

    async def _type_oid_by_name(self, typename: str, schema: str):
        """The OID of the type `typename` in `schema`, or None.

        Looked up in the catalog, with the driver's own codecs only (see
        Session.fetch_catalog), by a query that cannot fail: an error would
        abort the application's transaction.  See introspection.TYPE_BY_NAME
        for how names match.
        """
        key, aliased = introspection.sql_type_spelling(typename)
        if schema == 'pg_catalog' and key == typename and not aliased:
            oid = self._builtin_type_oid(typename)
            if oid is not None:
                return oid
        rows = await self._session.fetch_catalog(
            introspection.TYPE_BY_NAME, (typename, schema, key, aliased, schema == 'public'),
            None)
        return rows[0][0] if rows else None

    def _builtin_type_oid(self, typename: str) -> int | None:
        """The OID of the built-in type named exactly `typename`, known without asking.

        Built-in types keep their OIDs in every PostgreSQL release (clients
        hard-code them), so on a server as new as the one pg_types was
        generated from, the catalog query would find the type pg_types names
        (built-in types are seldom removed: the last ones went in PostgreSQL
        12).  asyncpg skips the query too.  It matters to SQLAlchemy, whose
        dialect sets the json and jsonb codecs on every new connection: the
        two lookups were four round trips to a backend whose catalog caches
        are still cold, 4-6 ms per connection (measured), about as long as
        opening the connection.
        """
        if self._session.server_version.major < pg_types.SOURCE_MAJOR:
            return None
        return pg_types.BY_NAME.get(typename)

    async def _type_info_by_name(self, typename: str, schema: str):
        oid = await self._type_oid_by_name(typename, schema)
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
