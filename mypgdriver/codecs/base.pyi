# Types of mypgdriver/codecs/base.pyx as Python code sees it: the encode and
# decode functions are C function pointers, out of Python's reach.
from typing import Any, Final

from typing_extensions import disjoint_base

FORMAT_TEXT_PY: Final[int]
FORMAT_BINARY_PY: Final[int]

@disjoint_base
class Codec:
    """How values of one type OID travel on the wire."""

    @property
    def oid(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def schema(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def format(self) -> int: ...
    element_codec: Codec | None
    field_codecs: tuple[Codec, ...] | None
    field_oids: tuple[int, ...] | None
    field_desc: Any
    element_delimiter: str | None
    py_encoder: Any
    py_decoder: Any
    extra: Any

def builtin_codecs() -> dict[int, Codec]: ...
def make_text_fallback(oid: int, name: str) -> Codec: ...
def clone_codec(codec: Codec, oid: int, name: str, schema: str, kind: str) -> Codec: ...
