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


#: What `parse_server_version` returns for a version it cannot read: it
#: compares below every real version, so version checks take the most
#: conservative path (e.g. the catalog query without multiranges).
UNKNOWN_SERVER_VERSION = ServerVersion(0, 0, 0, 'unknown', 0)

# At most 9 digits per number: int() of a longer run could be slow or raise
# (over 4300 digits), and no version number is that long.
_VERSION_RE = re.compile(
    r'(?:PostgreSQL\s+)?(?<!\d)(?P<major>\d{1,9})(?!\d)(?:\.(?P<minor>\d{1,9})(?!\d))?'
    r'(?:\.(?P<micro>\d{1,9})(?!\d))?(?:(?P<level>[a-z]{1,20})(?P<serial>\d{1,9})?(?!\d))?')


def _from_version_num(num: str | int | None) -> ServerVersion | None:
    # server_version_num: 150004 is 15.4, 90624 is 9.6.24.
    try:
        value = int(str(num).strip()) if num is not None and len(str(num)) <= 9 else -1
    except ValueError:
        return None
    if value < 10000:
        return None
    major = value // 10000
    if major >= 10:
        return ServerVersion(major, 0, value % 10000, 'final', 0)
    return ServerVersion(major, value // 100 % 100, value % 100, 'final', 0)


def parse_server_version(text: str | None,
                         version_num: str | int | None = None) -> ServerVersion:
    """Parse a `server_version` string such as '15.18 (Debian 15.18-0+deb12u1)' or '17beta2'.

    Never raises: the string comes from the server (or a proxy), and a value
    we cannot read must not make connecting fail.  When `text` has no
    version in it, `version_num` (the ``server_version_num`` setting, if the
    caller has it) is used; failing that, `UNKNOWN_SERVER_VERSION`.
    """
    m = _VERSION_RE.search(text) if isinstance(text, str) else None
    if m is None:
        return _from_version_num(version_num) or UNKNOWN_SERVER_VERSION
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
