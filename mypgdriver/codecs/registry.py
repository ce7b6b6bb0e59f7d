"""Which codec handles which type OID.

Built-in types are known up front (no catalog query for them, ever); types
the server reports that the driver has no codec for are moved as text, so
every query works.  The registry is a plain object so that connections of
one pool can share it.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable

import mypgdriver.codecs
from mypgdriver.codecs import base

# Every compiled module in this package registers its built-in codecs when
# imported, so adding a codec family is adding one module: no list to edit.
_NOT_CODEC_FAMILIES = {'base', 'registry', 'introspection'}


def _load_codec_modules() -> None:
    for info in pkgutil.iter_modules(mypgdriver.codecs.__path__):
        if info.name not in _NOT_CODEC_FAMILIES and not info.name.startswith('_'):
            importlib.import_module(f'mypgdriver.codecs.{info.name}')


_load_codec_modules()


class CodecRegistry:
    """Maps type OIDs to codecs for one connection (or one pool)."""

    def __init__(self) -> None:
        self._builtin = base.builtin_codecs()
        self._codecs: dict[int, object] = {}
        self._fallbacks: dict[int, object] = {}
        # Bumped whenever a codec changes, so cached statements can tell
        # that their codec arrays are stale.
        self.generation = 0

    def get_codec(self, oid: int):
        """The codec for `oid`: a registered one, a built-in one, else text."""
        codec = self._codecs.get(oid)
        if codec is not None:
            return codec
        codec = self._builtin.get(oid)
        if codec is not None:
            return codec
        codec = self._fallbacks.get(oid)
        if codec is None:
            codec = base.make_text_fallback(oid, f'oid {oid}')
            self._fallbacks[oid] = codec
        return codec

    def has_binary_codec(self, oid: int) -> bool:
        return oid in self._codecs or oid in self._builtin

    def missing(self, oids: Iterable[int]) -> list[int]:
        """OIDs that need a catalog lookup before a codec can be chosen.

        Until introspection lands, unknown types fall back to text, so
        nothing is ever missing.
        """
        return []
