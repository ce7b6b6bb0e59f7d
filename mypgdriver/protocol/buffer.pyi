# Types of mypgdriver/protocol/buffer.pyx as Python code sees it: the frame
# readers and writers are cdef (C only); these two methods are what is left.
from _typeshed import ReadableBuffer
from typing_extensions import disjoint_base

@disjoint_base
class ReadBuffer:
    """The receive buffer; messages are parsed in place."""

    def _feed(self, data: ReadableBuffer) -> None: ...
    def _capacity(self) -> int: ...

@disjoint_base
class WriteBuffer:
    """Growable output buffer for framed protocol messages."""

    def getvalue(self) -> bytes: ...
