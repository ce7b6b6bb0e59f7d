# Types of mypgdriver/protocol/buffer.pyx as Python code sees it: the frame
# readers and writers are cdef (C only); these two methods are what is left.
from _typeshed import ReadableBuffer

class ReadBuffer:
    """The receive buffer; messages are parsed in place."""

    def _feed(self, data: ReadableBuffer) -> None: ...

class WriteBuffer:
    """Growable output buffer for framed protocol messages."""

    def getvalue(self) -> bytes: ...
