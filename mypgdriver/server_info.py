"""What the server told us about itself: version and reported settings."""
from __future__ import annotations

import re
from typing import NamedTuple


class ServerVersion(NamedTuple):
    """The server's version, comparable like `sys.version_info` (asyncpg-compatible).

    From PostgreSQL 10 on, '15.4' is reported as (15, 0, 4, 'final', 0) so
    that `version[:2]` checks compare major versions only.
    """

    major: int
    minor: int
    micro: int
    releaselevel: str
    serial: int


_VERSION_RE = re.compile(
    r'(?:PostgreSQL\s+)?(?P<major>\d+)(?:\.(?P<minor>\d+))?(?:\.(?P<micro>\d+))?'
    r'(?P<level>[a-z]+)?(?P<serial>\d+)?')


def parse_server_version(text: str) -> ServerVersion:
    """Parse a `server_version` string such as '15.18 (Debian 15.18-0+deb12u1)' or '17beta2'."""
    m = _VERSION_RE.search(text)
    if m is None:
        raise ValueError(f'cannot parse PostgreSQL version from {text!r}')
    major = int(m['major'])
    minor = int(m['minor'] or 0)
    micro = int(m['micro'] or 0)
    level = m['level'] or 'final'
    serial = int(m['serial'] or 0)
    if major >= 10:
        return ServerVersion(major, 0, minor, level, serial)
    return ServerVersion(major, minor, micro, level, serial)


class ConnectionSettings:
    """Read-only attribute view of the settings the server reports (ParameterStatus).

    `conn.get_settings().server_version`, `.client_encoding`, `.TimeZone`, ...
    Values are live: they follow later `SET` commands the server reports.
    """

    __slots__ = ('_params',)

    def __init__(self, params: dict) -> None:
        self._params = params

    def __getattr__(self, name: str) -> str:
        try:
            return self._params[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self._params)

    def __repr__(self) -> str:
        return f'<ConnectionSettings {self._params!r}>'
