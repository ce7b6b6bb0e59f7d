"""Which codec handles which type OID.

The registry holds *type information* (what a type is: scalar, array of X,
domain over Y, composite with fields ...) and builds codecs from it on
demand, memoised.  Built-in types come from a generated table, so they
never need a catalog query; other types are learned by introspection (one
query for all unknown OIDs of a statement, recursively) and cached here.
User codecs (set_type_codec) are overrides by OID; changing one clears the
memo so that arrays and composites pick it up too.  A registry made with a
JsonCodec (connect(json=...)) has json and jsonb codecs that call its
loads/dumps in place of the built-in str ones.  Nothing here is tied to
one connection, so connections of a pool can share a registry.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Iterable, NamedTuple, Optional

import mypgdriver.codecs
from mypgdriver.codecs import base, pg_types

if TYPE_CHECKING:
    from mypgdriver.types import JsonCodec

_NOT_CODEC_FAMILIES = {'base', 'registry', 'introspection', 'pg_types'}


# Container families (composite, range, ...) build codecs from type info:
# a module exposes CONTAINER_KINDS = {typtype: factory(registry, info, depth)}.
CONTAINER_FACTORIES: dict = {}

# Codecs for extension types, which have no fixed OID: a module exposes
# CONTRIB_CODECS = {name: Codec}, attached to a type's OID on request
# (set_builtin_type_codec(codec_name='pg_contrib.<name>')).
CONTRIB_CODECS: dict = {}


def _load_codec_modules() -> None:
    # Every compiled module in this package registers its built-in codecs
    # when imported, so adding a codec family is adding one module.
    for info in pkgutil.iter_modules(mypgdriver.codecs.__path__):
        if info.name not in _NOT_CODEC_FAMILIES and not info.name.startswith('_'):
            module = importlib.import_module(f'mypgdriver.codecs.{info.name}')
            CONTAINER_FACTORIES.update(getattr(module, 'CONTAINER_KINDS', {}))
            CONTRIB_CODECS.update(getattr(module, 'CONTRIB_CODECS', {}))


_load_codec_modules()

from mypgdriver.codecs.array import make_array_codec, make_text_array_codec  # noqa: E402
from mypgdriver.codecs.json import make_json_codecs  # noqa: E402


class TypeInfo(NamedTuple):
    """What the catalog says about one type (pg_type and friends)."""

    oid: int
    name: str
    schema: str
    kind: str                 # typtype: b base, c composite, d domain, e enum, p pseudo, r range, m multirange
    category: str             # typcategory; 'A' for arrays
    element: int = 0          # arrays: element type
    base: int = 0             # domains: base type
    range_subtype: int = 0    # ranges: subtype
    multirange_of: int = 0    # multiranges: their range type
    delimiter: str = ','
    field_names: tuple = ()   # composites
    field_oids: tuple = ()


BUILTIN_TYPES = {
    oid: TypeInfo(oid, name, 'pg_catalog', typtype, category, elem, 0, subtype, mrange, delim)
    for oid, (name, typtype, category, elem, subtype, mrange, delim) in pg_types.TYPES.items()
}

class CodecRegistry:
    """Maps type OIDs to codecs for one connection (or one pool)."""

    def __init__(self, json: Optional[JsonCodec] = None) -> None:
        self._builtin_codecs = base.builtin_codecs()
        if json is not None:
            # connect(json=...): this registry's json and jsonb codecs call
            # loads/dumps.  In place of the built-in ones, so that arrays,
            # composites and domains of json/jsonb use them too, and a user
            # codec (set_type_codec) still wins, and reset_type_codec() goes
            # back to them.
            self._builtin_codecs.update(
                make_json_codecs(json.loads, json.dumps, json.loads_bytes))
        self._types: dict[int, TypeInfo] = dict(BUILTIN_TYPES)
        self._overrides: dict[int, object] = {}
        self._introspected: set[int] = set()
        self._memo: dict[int, object] = {}
        # Bumped whenever codecs change, so that cached statements can tell
        # that their codec arrays are stale.
        self.generation = 0

    # --- type information ---

    def type_info(self, oid: int) -> Optional[TypeInfo]:
        return self._types.get(oid)

    def type_by_name(self, name: str, schema: str) -> Optional[TypeInfo]:
        for info in self._types.values():
            if info.name == name and info.schema == schema:
                return info
        return None

    def add_types(self, infos: Iterable[TypeInfo]) -> None:
        """Learn types from introspection."""
        for info in infos:
            self._types[info.oid] = info
            self._introspected.add(info.oid)
        self._memo.clear()
        self.generation += 1

    def clear_introspected(self) -> None:
        """Forget every type learned from the catalog (after schema changes).

        Built-in types stay; user codecs (set_type_codec) stay, keyed by OID.
        """
        self._types = dict(BUILTIN_TYPES)
        self._introspected.clear()
        self._memo.clear()
        self.generation += 1

    def missing(self, oids: Iterable[int]) -> list[int]:
        """OIDs that need a catalog lookup before a codec can be chosen.

        Built-in row types (pg_type, pg_class...) are in the generated table
        without their fields, so they are looked up once like user types.
        """
        result = []
        for oid in set(oids):
            if oid in self._overrides:
                continue
            info = self._types.get(oid)
            if info is None or (info.kind == 'c' and not info.field_oids
                                and oid not in self._introspected):
                result.append(oid)
        return result

    # --- user codecs ---

    def set_override(self, oid: int, codec) -> None:
        self._overrides[oid] = codec
        self._memo.clear()
        self.generation += 1

    def remove_override(self, oid: int) -> None:
        self._overrides.pop(oid, None)
        self._memo.clear()
        self.generation += 1

    # --- codecs ---

    def get_codec(self, oid: int):
        """The codec for `oid`; types without a binary codec are moved as text."""
        codec = self._memo.get(oid)
        if codec is None:
            codec = self._build(oid, 0)
            self._memo[oid] = codec
        return codec

    def _build(self, oid: int, depth: int):
        if depth > 64:
            # A type graph this deep is a cycle (the catalog cannot create
            # one, but a broken extension could): move the value as text.
            return base.make_text_fallback(oid, f'oid {oid}')
        codec = self._overrides.get(oid)
        if codec is not None:
            return codec
        codec = self._builtin_codecs.get(oid)
        if codec is not None:
            return codec
        info = self._types.get(oid)
        if info is None:
            return base.make_text_fallback(oid, f'oid {oid}')
        if info.category == 'A' and info.element:
            element = self._child(info.element, depth)
            if element.format == base.FORMAT_BINARY_PY:
                return make_array_codec(oid, info.name, info.schema, element, info.element,
                                        info.delimiter)
            return make_text_array_codec(oid, info.name, info.schema, element, info.delimiter)
        if info.kind == 'd' and info.base:
            return self._child(info.base, depth)
        if info.kind == 'e':
            # An enum's binary form is its label, like text.
            return base.clone_codec(self._builtin_codecs[25], oid, info.name, info.schema, 'enum')
        factory = CONTAINER_FACTORIES.get(info.kind)
        if factory is not None:
            codec = factory(self, info, depth)
            if codec is not None:
                return codec
        return base.make_text_fallback(oid, info.name)

    def child_codec(self, oid: int, depth: int):
        """For container factories: the codec of a contained type."""
        return self._child(oid, depth)

    def _child(self, oid: int, depth: int):
        codec = self._memo.get(oid)
        if codec is None:
            codec = self._build(oid, depth + 1)
            self._memo[oid] = codec
        return codec
