# Types of mypgdriver/codecs/usercodec.pyx as Python code sees it.
import struct
from typing import Any, Callable, Final

from mypgdriver.codecs.base import Codec

# type OID -> (wire layout, order of the user's tuple or None)
TUPLE_LAYOUTS: Final[dict[int, tuple[struct.Struct, tuple[int, ...] | None]]]

def make_user_codec(oid: int, name: str, schema: str, format: str,
                    encoder: Callable[[Any], Any], decoder: Callable[[Any], Any],
                    core: Codec | None = None) -> Codec: ...
