# Types of mypgdriver/codecs/array.pyx as Python code sees it.
from mypgdriver.codecs.base import Codec

def make_array_codec(oid: int, name: str, schema: str, element: Codec, element_oid: int,
                     delimiter: str = ',') -> Codec: ...
def make_text_array_codec(oid: int, name: str, schema: str, element: Codec,
                          delimiter: str = ',') -> Codec: ...
