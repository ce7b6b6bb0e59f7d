"""Resolve everything that says where and how to connect into one ConnectParams.

Inputs, highest precedence first (asyncpg's ``connect()`` semantics):

1. keyword arguments of ``connect()``;
2. the DSN, either a URI (``postgresql://user:pw@host:port/db?key=value``) or a
   libpq key/value string (``host=h port=5432 dbname=db``);
3. libpq's environment variables (``PGHOST``, ``PGPORT``, ...);
4. defaults.

Every option goes through one table (``_OPTIONS``) and one loop; the few
values that depend on others (host/port pairing, user-derived database,
per-host passwords from the password file) are derived afterwards.

The rules follow the libpq documentation: "Connection Strings"
(libpq-connect), "Environment Variables" (libpq-envars) and "The Password
File" (libpq-pgpass). Where asyncpg deliberately differs from libpq (unknown
DSN parameters become server settings), asyncpg wins.
"""

from __future__ import annotations

import os
import re
import ssl as ssl_module
import stat
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from mypgdriver.exceptions import ClientConfigurationError

__all__ = [
    "ConnectParams",
    "HostSpec",
    "parse_connect_params",
    "parse_dsn",
    "DEFAULT_PORT",
    "DEFAULT_SOCKET_DIRS",
]

DEFAULT_PORT = 5432

# Where distributions put the server's Unix socket; the first one that exists
# is tried before 'localhost' when no host is configured anywhere.
DEFAULT_SOCKET_DIRS: tuple[str, ...] = (
    "/run/postgresql",
    "/var/run/postgresql",
    "/tmp",
    "/private/tmp",
)

TLS_VERSIONS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
SSL_NEGOTIATIONS = ("postgres", "direct")
CHANNEL_BINDINGS = ("disable", "prefer", "require")
TARGET_SESSION_ATTRS = (
    "any", "read-write", "read-only", "primary", "standby", "prefer-standby",
)
LOAD_BALANCE_HOSTS = ("disable", "random")
# Wire protocol versions, as libpq 18 spells them: 3.1 was never used.
PROTOCOL_VERSIONS = ("3.0", "3.2")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]

# sslmodes that never fall back to a plaintext connection.
_SSL_REQUIRED_MODES = ("require", "verify-ca", "verify-full")

# libpq keywords we accept and drop: they tune features this driver does not
# have (GSSAPI, SSL knobs without a field here), and sending them to the
# server as settings would make it reject the connection.
_IGNORED_KEYWORDS = frozenset({
    "krbsrvname", "gsslib", "gssencmode", "gssdelegation", "tty",
    "sslcompression", "sslsni", "sslcertmode", "sslkeylogfile",
    "tcp_user_timeout", "requiressl",
})

# libpq keywords that change which server is reached or how it is
# authenticated: silently ignoring them would be unsafe.
_UNSUPPORTED_KEYWORDS = frozenset({
    "hostaddr", "service", "servicefile", "requirepeer", "require_auth",
})

_URI_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
_INTEGER = re.compile(r"[+-]?[0-9]+")


# --------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class HostSpec:
    """One server address to try, with the password resolved for it."""

    host: str
    """Host name, IP literal (no brackets), or an absolute directory holding
    the server's Unix socket (``@name`` for Linux's abstract namespace)."""
    port: int
    password: str | None = field(default=None, repr=False)
    """The explicit password, else the password file's match for this host."""

    @property
    def is_unix_socket(self) -> bool:
        """True when ``host`` names a Unix-domain socket directory."""
        return self.host.startswith(("/", "@"))

    @property
    def socket_path(self) -> str:
        """The address to pass to a Unix-socket connect call.

        For ``@name`` hosts the leading ``@`` becomes a NUL byte, which is how
        Linux (and Python's AF_UNIX support) spells the abstract namespace.
        """
        path = f"{self.host}/.s.PGSQL.{self.port}"
        if path.startswith("@"):
            return "\0" + path[1:]
        return path


@dataclass(frozen=True)
class ConnectParams:
    """Everything the connection code needs, fully resolved and validated."""

    hosts: tuple[HostSpec, ...]
    user: str
    database: str
    connect_timeout: float | None = None
    server_settings: Mapping[str, str] = field(
        default_factory=lambda: types.MappingProxyType({}))
    sslmode: str = "prefer"
    ssl: ssl_module.SSLContext | None = None
    """A context to use as is (given by the caller, or made for ``ssl=True``);
    None means the connection code builds one from sslmode and the ssl* files."""
    sslrootcert: str | None = None
    sslcert: str | None = None
    sslkey: str | None = None
    sslpassword: str | None = field(default=None, repr=False)
    sslcrl: str | None = None
    sslnegotiation: str = "postgres"
    ssl_min_protocol_version: str = "TLSv1.2"    # libpq's default
    ssl_max_protocol_version: str | None = None
    channel_binding: str = "prefer"
    target_session_attrs: str = "any"
    load_balance_hosts: str = "disable"
    keepalives: bool = True
    keepalives_idle: int | None = None
    keepalives_interval: int | None = None
    keepalives_count: int | None = None
    passfile: str | None = None
    """The password file that applies (explicit or the default location)."""
    min_protocol_version: str = "3.0"
    """The oldest wire protocol version accepted when the server negotiates down."""
    max_protocol_version: str = "3.0"
    """The protocol version asked for in the StartupMessage ('latest' resolved)."""


# --------------------------------------------------------------------------
# Value parsers: raw value (str from a DSN or the environment, or whatever
# the caller passed as a keyword) -> typed value. They raise ValueError with
# a reason; the resolving loop turns it into ClientConfigurationError.
# --------------------------------------------------------------------------

def _parse_str(raw: object) -> str:
    if not isinstance(raw, str):
        raise ValueError(f"expected a str, got {type(raw).__name__}")
    return raw


def _one_of(choices: Sequence[str]) -> Callable[[object], str]:
    def parse_choice(raw: object) -> str:
        if raw not in choices:
            raise ValueError(f"{raw!r} is not one of: {', '.join(choices)}")
        return raw  # type: ignore[return-value]
    return parse_choice


def _parse_int(raw: object) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    # libpq accepts surrounding whitespace but nothing else around the digits.
    if isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        return int(raw)
    raise ValueError(f"{raw!r} is not an integer")


def _parse_positive_int(raw: object) -> int | None:
    # libpq: zero (and below) leaves the TCP keepalive knob at the OS default.
    value = _parse_int(raw)
    return value if value > 0 else None


def _parse_flag(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    return _parse_int(raw) != 0


def _parse_connect_timeout(raw: object) -> float | None:
    if isinstance(raw, str):
        seconds: float = _parse_int(raw)
        # libpq (through PostgreSQL 17) raises 1 to 2 so that rounding
        # cannot turn a one-second limit into almost no wait at all.
        if seconds == 1:
            seconds = 2
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
        seconds = raw
    else:
        raise ValueError(f"{raw!r} is not a number of seconds")
    return float(seconds) if seconds > 0 else None


def _parse_protocol_version(raw: object) -> str:
    # libpq 18 accepts exactly these spellings ("latest" is the newest the
    # client implements).
    if raw == "latest":
        return LATEST_PROTOCOL_VERSION
    if raw in PROTOCOL_VERSIONS:
        return raw  # type: ignore[return-value]
    raise ValueError(f"{raw!r} is not one of: {', '.join(PROTOCOL_VERSIONS)}, latest")


def _parse_host_list(raw: object) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else _as_list(raw, "host")
    hosts = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"expected host names as str, got {type(item).__name__}")
        item = item.strip()
        if item.startswith("[") and item.endswith("]"):
            item = item[1:-1]
        hosts.append(item)
    return hosts


def _parse_port_list(raw: object) -> list[int | None]:
    """Ports in order; None marks an empty entry, which means the default."""
    if isinstance(raw, str):
        items: Sequence[object] = raw.split(",")
    elif isinstance(raw, int):
        items = [raw]
    else:
        items = _as_list(raw, "port")
    ports: list[int | None] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            ports.append(None)
            continue
        try:
            port = _parse_int(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a valid port number") from None
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is out of range (1-65535)")
        ports.append(port)
    return ports


def _as_list(raw: object, what: str) -> list[object]:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    raise ValueError(f"expected a str or a list of {what}s, got {type(raw).__name__}")


# --------------------------------------------------------------------------
# The option table
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Option:
    name: str                   # connect() keyword / ConnectParams field
    keywords: tuple[str, ...]   # libpq DSN keywords that set it
    env: str | None             # libpq environment variable
    parse: Callable[[object], Any]
    default: Any = None
    secret: bool = False        # never echo the value in an error message
    startup: bool = False       # sent to the server as a startup parameter


_OPTIONS: tuple[_Option, ...] = (
    _Option("host", ("host",), "PGHOST", _parse_host_list),
    _Option("port", ("port",), "PGPORT", _parse_port_list),
    _Option("user", ("user",), "PGUSER", _parse_str),
    _Option("password", ("password",), "PGPASSWORD", _parse_str, secret=True),
    _Option("passfile", ("passfile",), "PGPASSFILE", _parse_str),
    _Option("database", ("dbname", "database"), "PGDATABASE", _parse_str),
    _Option("connect_timeout", ("connect_timeout",), "PGCONNECT_TIMEOUT",
            _parse_connect_timeout),
    # No default here: it depends on sslrootcert (see _default_sslmode).
    _Option("sslmode", ("sslmode",), "PGSSLMODE", _one_of(SSL_MODES), None),
    _Option("sslrootcert", ("sslrootcert",), "PGSSLROOTCERT", _parse_str),
    _Option("sslcert", ("sslcert",), "PGSSLCERT", _parse_str),
    _Option("sslkey", ("sslkey",), "PGSSLKEY", _parse_str),
    _Option("sslpassword", ("sslpassword",), None, _parse_str, secret=True),
    _Option("sslcrl", ("sslcrl",), "PGSSLCRL", _parse_str),
    _Option("sslnegotiation", ("sslnegotiation",), "PGSSLNEGOTIATION",
            _one_of(SSL_NEGOTIATIONS), "postgres"),
    _Option("ssl_min_protocol_version", ("ssl_min_protocol_version",),
            "PGSSLMINPROTOCOLVERSION", _one_of(TLS_VERSIONS), "TLSv1.2"),
    _Option("ssl_max_protocol_version", ("ssl_max_protocol_version",),
            "PGSSLMAXPROTOCOLVERSION", _one_of(TLS_VERSIONS)),
    _Option("channel_binding", ("channel_binding",), "PGCHANNELBINDING",
            _one_of(CHANNEL_BINDINGS), "prefer"),
    _Option("target_session_attrs", ("target_session_attrs",),
            "PGTARGETSESSIONATTRS", _one_of(TARGET_SESSION_ATTRS), "any"),
    _Option("load_balance_hosts", ("load_balance_hosts",), "PGLOADBALANCEHOSTS",
            _one_of(LOAD_BALANCE_HOSTS), "disable"),
    _Option("min_protocol_version", ("min_protocol_version",), "PGMINPROTOCOLVERSION",
            _parse_protocol_version, "3.0"),
    # No default here: it depends on min_protocol_version (_default_max_protocol).
    _Option("max_protocol_version", ("max_protocol_version",), "PGMAXPROTOCOLVERSION",
            _parse_protocol_version),
    _Option("keepalives", ("keepalives",), None, _parse_flag, True),
    _Option("keepalives_idle", ("keepalives_idle",), None, _parse_positive_int),
    _Option("keepalives_interval", ("keepalives_interval",), None,
            _parse_positive_int),
    _Option("keepalives_count", ("keepalives_count",), None, _parse_positive_int),
    _Option("application_name", ("application_name",), "PGAPPNAME", _parse_str,
            startup=True),
    _Option("options", ("options",), "PGOPTIONS", _parse_str, startup=True),
    # Only used when application_name is not set anywhere (libpq rule).
    _Option("fallback_application_name", ("fallback_application_name",), None,
            _parse_str),
)

_OPTION_BY_KEYWORD = {kw: opt for opt in _OPTIONS for kw in opt.keywords}


def _default_sslmode(sslmode: str | None, sslrootcert: str | None) -> str:
    # libpq 16+: sslrootcert=system trusts every CA of the operating system,
    # which is only safe with host name checks, so it implies verify-full
    # and refuses anything weaker.
    if sslrootcert == "system":
        if sslmode is None:
            return "verify-full"
        if sslmode != "verify-full":
            raise ClientConfigurationError(
                f"sslrootcert=system requires sslmode verify-full, not {sslmode!r}")
    return sslmode or "prefer"


def _default_max_protocol(min_version: str, max_version: str | None) -> str:
    # libpq 18: without max_protocol_version ask for 3.0, because many
    # poolers and proxies do not answer a newer minor version with
    # NegotiateProtocolVersion; but a minimum above 3.0 could never be met
    # that way, so then ask for the latest.
    if max_version is None:
        max_version = "3.0" if min_version == "3.0" else LATEST_PROTOCOL_VERSION
    if PROTOCOL_VERSIONS.index(min_version) > PROTOCOL_VERSIONS.index(max_version):
        raise ClientConfigurationError(
            f"min_protocol_version {min_version} is greater than "
            f"max_protocol_version {max_version}")
    return max_version


def _is_given(value: object) -> bool:
    # An empty string or list counts as "not set" in every source, so that
    # e.g. PGHOST= or `postgresql://u:@h` fall through to the next source.
    return value is not None and value != "" and value != [] and value != ()


def _resolve_options(
    kwargs: Mapping[str, object],
    dsn_values: Mapping[str, object],
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """Pick each option from the highest-precedence source that sets it."""
    values: dict[str, Any] = {}
    for opt in _OPTIONS:
        sources = [(kwargs.get(opt.name), "keyword argument"),
                   (dsn_values.get(opt.name), "DSN")]
        if opt.env:
            sources.append((environ.get(opt.env), f"environment variable {opt.env}"))
        raw, origin = next(((v, o) for v, o in sources if _is_given(v)), (None, ""))
        if raw is None:
            values[opt.name] = opt.default
            continue
        try:
            values[opt.name] = opt.parse(raw)
        except ValueError as exc:
            reason = "" if opt.secret else f": {exc}"
            raise ClientConfigurationError(
                f"invalid {opt.name} in {origin}{reason}") from None
    return values


# --------------------------------------------------------------------------
# DSN parsing
# --------------------------------------------------------------------------

def parse_dsn(dsn: str) -> dict[str, str | list[str]]:
    """Split a connection string into libpq keyword -> raw value.

    Accepts ``postgresql://`` / ``postgres://`` URIs and libpq key/value
    strings. Values stay strings, except that a URI's host part yields lists
    for ``host`` and ``port`` (one entry per host; empty string = not given).
    Error messages never quote the DSN, since it may hold a password.
    """
    match = _URI_SCHEME.match(dsn)
    if match:
        scheme = match.group(1).lower()
        if scheme not in ("postgresql", "postgres"):
            raise ClientConfigurationError(
                f"unsupported DSN scheme {scheme!r}: expected postgresql:// or postgres://")
        return _parse_uri(dsn[match.end():])
    if "=" not in dsn:
        raise ClientConfigurationError(
            "invalid DSN: expected a postgresql:// URI or keyword=value pairs")
    return _parse_keyword_value(dsn)


def _parse_uri(rest: str) -> dict[str, str | list[str]]:
    """Parse what follows ``scheme://`` (libpq-connect, "Connection URIs")."""
    result: dict[str, str | list[str]] = {}
    rest, _, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")

    # rpartition tolerates an unencoded '@' in a password, a common mistake.
    userinfo, at, hostlist = netloc.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        if user:
            result["user"] = _percent_decode(user, "user name")
        if colon and password:
            result["password"] = _percent_decode(password, "password")

    hosts, ports = [], []
    for item in hostlist.split(","):
        host, port = _split_uri_host(item)
        hosts.append(_percent_decode(host, "host"))
        ports.append(_percent_decode(port, "port"))
    if any(hosts):
        result["host"] = hosts
    if any(ports):
        result["port"] = ports

    if slash and path:
        result["dbname"] = _percent_decode(path, "database name")

    # Query parameters come last and so override the parts above, as in libpq.
    for pair in query.split("&") if query else ():
        if not pair:
            continue
        key, eq, value = pair.partition("=")
        if not eq:
            raise ClientConfigurationError(
                "invalid DSN: a URI query parameter lacks '=' (expected key=value)")
        key = _percent_decode(key, "query parameter name")
        value = _percent_decode(value, f"value of query parameter {key!r}")
        if key == "ssl":
            # JDBC spelling that libpq also accepts.
            if value != "true":
                raise ClientConfigurationError(
                    f"invalid DSN: ssl={value!r} (only ssl=true is accepted, meaning sslmode=require)")
            result.setdefault("sslmode", "require")
            continue
        result[key] = value
    return result


def _split_uri_host(item: str) -> tuple[str, str]:
    """Split one ``host[:port]`` / ``[v6addr][:port]`` entry of a URI."""
    if not item.startswith("["):
        host, _, port = item.partition(":")
        return host, port
    close = item.find("]")
    if close < 0:
        raise ClientConfigurationError("invalid DSN: IPv6 address lacks the closing ']'")
    after = item[close + 1:]
    if after and not after.startswith(":"):
        raise ClientConfigurationError(
            "invalid DSN: unexpected text after a bracketed IPv6 address")
    return item[1:close], after[1:]


def _percent_decode(text: str, part: str) -> str:
    """Decode %XX escapes strictly; '+' stays a plus sign, as in libpq."""
    if "%" not in text:
        return text
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char != "%":
            out += char.encode()
            i += 1
            continue
        hex_pair = text[i + 1:i + 3]
        if len(hex_pair) != 2 or not all(c in "0123456789abcdefABCDEF" for c in hex_pair):
            raise ClientConfigurationError(
                f"invalid DSN: bad percent-encoding in the {part}")
        byte = int(hex_pair, 16)
        if byte == 0:
            raise ClientConfigurationError(f"invalid DSN: %00 is not allowed in the {part}")
        out.append(byte)
        i += 3
    try:
        return out.decode()
    except UnicodeDecodeError:
        raise ClientConfigurationError(
            f"invalid DSN: the {part} is not valid UTF-8 after percent-decoding") from None


def _parse_keyword_value(dsn: str) -> dict[str, str | list[str]]:
    """Parse ``key=value`` pairs (libpq-connect, "Keyword/Value Connection Strings")."""
    result: dict[str, str | list[str]] = {}
    pos, end = 0, len(dsn)

    def skip_spaces(i: int) -> int:
        while i < end and dsn[i].isspace():
            i += 1
        return i

    while True:
        pos = skip_spaces(pos)
        if pos >= end:
            return result
        start = pos
        while pos < end and not dsn[pos].isspace() and dsn[pos] != "=":
            pos += 1
        key = dsn[start:pos]
        pos = skip_spaces(pos)
        # Report positions, not text: the text may be part of a password.
        if not key or pos >= end or dsn[pos] != "=":
            raise ClientConfigurationError(
                f"invalid DSN: expected keyword=value at character {start + 1}")
        pos = skip_spaces(pos + 1)
        value: list[str] = []
        if pos < end and dsn[pos] == "'":
            quote_at = pos
            pos += 1
            while True:
                if pos >= end:
                    raise ClientConfigurationError(
                        f"invalid DSN: unterminated quoted value starting at character {quote_at + 1}")
                char = dsn[pos]
                if char == "\\" and pos + 1 < end:
                    value.append(dsn[pos + 1])
                    pos += 2
                elif char == "'":
                    pos += 1
                    break
                else:
                    value.append(char)
                    pos += 1
        else:
            while pos < end and not dsn[pos].isspace():
                if dsn[pos] == "\\" and pos + 1 < end:
                    pos += 1
                value.append(dsn[pos])
                pos += 1
        result[key] = "".join(value)


def _sort_dsn_keywords(
    parsed: Mapping[str, str | list[str]],
) -> tuple[dict[str, object], dict[str, str]]:
    """Split parsed DSN keywords into table options and extra server settings."""
    option_values: dict[str, object] = {}
    server_settings: dict[str, str] = {}
    for key, value in parsed.items():
        opt = _OPTION_BY_KEYWORD.get(key)
        if opt is not None:
            option_values[opt.name] = value
        elif key in _UNSUPPORTED_KEYWORDS:
            raise ClientConfigurationError(f"DSN keyword {key!r} is not supported")
        elif key not in _IGNORED_KEYWORDS:
            # asyncpg (unlike libpq) sends unknown parameters as server settings.
            server_settings[key] = value  # type: ignore[assignment]
    return option_values, server_settings


# --------------------------------------------------------------------------
# Password file (libpq-pgpass)
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _PgpassEntry:
    # None means the field was a bare '*', which matches anything.
    host: str | None
    port: str | None
    database: str | None
    user: str | None
    password: str = field(repr=False)

    def matches(self, hosts: Iterable[str], port: int, database: str, user: str) -> bool:
        return ((self.host is None or self.host in hosts)
                and (self.port is None or self.port == str(port))
                and (self.database is None or self.database == database)
                and (self.user is None or self.user == user))


def _read_pgpass(path: str) -> list[_PgpassEntry]:
    """Read the password file, or return [] (with a warning if it is unsafe)."""
    try:
        info = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(info.st_mode):
        warnings.warn(f'password file "{path}" is not a plain file', UserWarning,
                      stacklevel=3)
        return []
    # libpq ignores a file others can read: it would leak the passwords.
    if os.name != "nt" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.warn(
            f'password file "{path}" has group or world access; '
            "permissions should be u=rw (0600) or less", UserWarning, stacklevel=3)
        return []
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        warnings.warn(f'could not read password file "{path}": {type(exc).__name__}',
                      UserWarning, stacklevel=3)
        return []
    entries = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        entry = _parse_pgpass_line(line)
        if entry is not None:
            entries.append(entry)
    return entries


def _parse_pgpass_line(line: str) -> _PgpassEntry | None:
    """Parse ``host:port:database:user:password``; None if it has too few fields."""
    fields: list[str | None] = []
    pos = 0
    while len(fields) < 4:
        value: list[str] = []
        start = pos
        while pos < len(line) and line[pos] != ":":
            if line[pos] == "\\" and pos + 1 < len(line):
                pos += 1
            value.append(line[pos])
            pos += 1
        if pos >= len(line):
            return None
        # Only an unescaped lone '*' is a wildcard; '\*' is a literal star.
        fields.append(None if line[start:pos] == "*" else "".join(value))
        pos += 1
    # The password is the rest of the line, colons included; a trailing lone
    # backslash escapes nothing and is dropped.
    password = re.sub(r"\\(.?)", lambda m: m.group(1), line[pos:])
    host, port, database, user = fields
    return _PgpassEntry(host, port, database, user, password=password)


def _default_passfile(environ: Mapping[str, str]) -> str | None:
    if os.name == "nt":
        appdata = environ.get("APPDATA")
        return os.path.join(appdata, "postgresql", "pgpass.conf") if appdata else None
    home = environ.get("HOME") or _passwd_entry_field("pw_dir")
    return os.path.join(home, ".pgpass") if home else None


def _passwd_entry_field(name: str) -> str | None:
    try:
        import pwd
        return getattr(pwd.getpwuid(os.getuid()), name)
    except (ImportError, KeyError):
        return None


def _os_user_name(environ: Mapping[str, str]) -> str:
    # getpass.getuser()'s lookup order, applied to the given environment.
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if environ.get(var):
            return environ[var]
    name = _passwd_entry_field("pw_name")
    if not name:
        raise ClientConfigurationError("could not determine the user name to connect as")
    return name


# --------------------------------------------------------------------------
# Putting it together
# --------------------------------------------------------------------------

def _default_hosts() -> list[str]:
    for directory in DEFAULT_SOCKET_DIRS:
        if os.path.isdir(directory):
            return [directory, "localhost"]
    return ["localhost"]


def _pair_hosts_and_ports(hosts: list[str], ports: list[int | None]) -> list[tuple[str, int]]:
    if len(ports) == 1:
        ports = ports * len(hosts)
    elif len(ports) != len(hosts):
        raise ClientConfigurationError(
            f"could not match {len(ports)} port numbers to {len(hosts)} hosts "
            "(give one port for all hosts, or one per host)")
    default_host = _default_hosts()[0]
    return [(host or default_host, DEFAULT_PORT if port is None else port)
            for host, port in zip(hosts, ports)]


def _ssl_kwarg_to_mode(ssl: object) -> tuple[str | None, ssl_module.SSLContext | None]:
    """Map asyncpg's ``ssl`` argument to (sslmode, context)."""
    if ssl is None or isinstance(ssl, str):
        return ssl, None
    if ssl is True:
        # asyncpg: a default context, i.e. system CAs and host name checks.
        return "verify-full", ssl_module.create_default_context()
    if ssl is False:
        return "disable", None
    if isinstance(ssl, ssl_module.SSLContext):
        # asyncpg: SSL is required; the caller's context decides verification.
        return "require", ssl
    raise ClientConfigurationError(
        f"ssl must be None, a bool, an sslmode str or an ssl.SSLContext, "
        f"not {type(ssl).__name__}")


def _check_server_settings(settings: object) -> dict[str, str]:
    if settings is None:
        return {}
    if not isinstance(settings, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in settings.items()):
        raise ClientConfigurationError("server_settings must be a mapping of str to str")
    return dict(settings)


def parse_connect_params(
    dsn: str | None = None,
    *,
    host: str | Sequence[str] | None = None,
    port: int | str | Sequence[int | str] | None = None,
    user: str | None = None,
    password: str | None = None,
    passfile: str | None = None,
    database: str | None = None,
    server_settings: Mapping[str, str] | None = None,
    ssl: bool | str | ssl_module.SSLContext | None = None,
    direct_tls: bool | None = None,
    target_session_attrs: str | None = None,
    connect_timeout: float | None = None,
    min_protocol_version: str | None = None,
    max_protocol_version: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ConnectParams:
    """Combine connect() arguments, a DSN, the environment and the password file.

    Precedence: keyword arguments > DSN > environment variables > defaults.
    ``host`` may be a comma-separated str or a list; ``port`` an int, a str
    (possibly comma-separated) or a list, with one port for all hosts or one
    per host. ``ssl`` follows asyncpg: an sslmode name, ``False``
    ('disable'), ``True`` (a default ``SSLContext``, 'verify-full') or an
    ``SSLContext`` ('require', the context decides verification).
    ``direct_tls`` sets sslnegotiation to 'direct' or 'postgres'.
    ``min_protocol_version`` / ``max_protocol_version`` take libpq 18's
    values ('3.0', '3.2', 'latest').
    ``environ`` defaults to ``os.environ``.

    Raises ClientConfigurationError for anything invalid; its message names
    the problem and never contains a password.
    """
    if environ is None:
        environ = os.environ
    if direct_tls not in (None, True, False):
        raise ClientConfigurationError("direct_tls must be a bool or None")

    explicit_settings = _check_server_settings(server_settings)
    sslmode, ssl_context = _ssl_kwarg_to_mode(ssl)
    kwargs: dict[str, object] = {
        "host": host, "port": port, "user": user, "password": password,
        "passfile": passfile, "database": database,
        "connect_timeout": connect_timeout, "sslmode": sslmode,
        "sslnegotiation": None if direct_tls is None else ("direct" if direct_tls else "postgres"),
        "target_session_attrs": target_session_attrs,
        "min_protocol_version": min_protocol_version,
        "max_protocol_version": max_protocol_version,
    }
    # Startup parameters given in server_settings compete with their DSN
    # keyword and environment variable like any other keyword argument.
    kwargs.update({opt.name: explicit_settings.get(opt.name) for opt in _OPTIONS if opt.startup})

    dsn_values, dsn_settings = _sort_dsn_keywords(parse_dsn(dsn) if dsn else {})
    values = _resolve_options(kwargs, dsn_values, environ)
    values["sslmode"] = _default_sslmode(values["sslmode"], values["sslrootcert"])
    values["max_protocol_version"] = _default_max_protocol(
        values["min_protocol_version"], values["max_protocol_version"])

    if values["sslnegotiation"] == "direct" and values["sslmode"] not in _SSL_REQUIRED_MODES:
        raise ClientConfigurationError(
            f"sslnegotiation 'direct' needs sslmode require, verify-ca or verify-full, "
            f"not {values['sslmode']!r}")
    if ssl is True and values["sslnegotiation"] == "direct":
        # PostgreSQL 17+ insists on this ALPN name for direct TLS.
        ssl_context.set_alpn_protocols(["postgresql"])  # type: ignore[union-attr]

    settings = dict(dsn_settings)
    settings.update({opt.name: values[opt.name] for opt in _OPTIONS
                     if opt.startup and values[opt.name] is not None})
    settings.update(explicit_settings)
    if "application_name" not in settings and values["fallback_application_name"]:
        settings["application_name"] = values["fallback_application_name"]

    resolved_user = values["user"] or _os_user_name(environ)
    resolved_database = values["database"] or resolved_user
    passfile_path = values["passfile"] or _default_passfile(environ)

    addresses = _pair_hosts_and_ports(values["host"] or _default_hosts(),
                                      values["port"] or [DEFAULT_PORT])
    explicit_password = values["password"]
    pgpass_entries = None
    hosts = []
    for host_name, host_port in addresses:
        host_password = explicit_password
        if host_password is None and passfile_path:
            if pgpass_entries is None:
                pgpass_entries = _read_pgpass(passfile_path)
            # A socket directory is looked up as 'localhost' (libpq does this
            # for its default socket directory; asyncpg for any).
            names = (host_name, "localhost") if host_name.startswith(("/", "@")) else (host_name,)
            host_password = next(
                (e.password for e in pgpass_entries
                 if e.matches(names, host_port, resolved_database, resolved_user)),
                None) or None
        hosts.append(HostSpec(host_name, host_port, host_password))

    fields = {name: values[name] for name in ConnectParams.__dataclass_fields__
              if name in values}
    fields.update(
        hosts=tuple(hosts), user=resolved_user, database=resolved_database,
        server_settings=types.MappingProxyType(settings), ssl=ssl_context,
        passfile=passfile_path,
    )
    return ConnectParams(**fields)
