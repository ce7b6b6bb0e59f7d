# Types of mypgdriver/protocol/coreproto.pyx as Python code sees it: the
# protocol state machine is cdef; its public and read-only fields are here.
from typing import Final, final

from typing_extensions import disjoint_base

from mypgdriver.protocol.buffer import ReadBuffer

UNSUPPORTED_AUTH_METHODS: Final[dict[int, str]]
SUPPORTED_PROTOCOL_MINORS: Final[tuple[int, ...]]

def ssl_request_message() -> bytes: ...

@final
class Operation:
    """One request in flight."""

@final
class StatusSink:
    """Where a bind/execute operation also leaves its status tag."""

    status: str | None
    def __init__(self) -> None: ...

@disjoint_base
class CoreProtocol:
    """The v3 protocol state machine (no asyncio in it)."""

    @property
    def rbuf(self) -> ReadBuffer: ...
    @property
    def xact_status(self) -> str: ...
    @property
    def backend_pid(self) -> int: ...
    @property
    def backend_secret(self) -> bytes | None: ...
    @property
    def server_parameters(self) -> dict[str, str]: ...
    @property
    def protocol_minor(self) -> int: ...
    tls_server_cert_der: bytes | None
    channel_binding: str | None
    auth_method: str | None
    @property
    def authenticated(self) -> bool: ...
    @property
    def depth(self) -> int: ...
    @property
    def max_depth(self) -> int: ...
    record_class: type | None
    def cancel_request_message(self) -> bytes: ...
    def _configure_startup(self, user: str, password: str | None,
                           params: dict[str, str], min_protocol_minor: int = 0,
                           max_protocol_minor: int = 0) -> None: ...
    def _feed_for_tests(self, data: bytes) -> None: ...
