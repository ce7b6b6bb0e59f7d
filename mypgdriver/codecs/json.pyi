# Types of mypgdriver/codecs/json.pyx as Python code sees it.
from typing import Any, Callable, Union

from mypgdriver.codecs.base import Codec

def make_json_codecs(loads: Callable[[Any], Any], dumps: Callable[[Any], Union[str, bytes]],
                     loads_bytes: bool) -> dict[int, Codec]: ...
