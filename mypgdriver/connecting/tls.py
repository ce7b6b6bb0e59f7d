"""TLS for PostgreSQL connections: contexts from libpq's sslmode rules, and the
SSLRequest negotiation.

sslmode (libpq-ssl "SSL Mode Descriptions"):
  disable      never TLS
  allow        plain text first; TLS only if the server refuses plain text
  prefer       TLS if the server accepts it, else plain text (the default)
  require      TLS, no certificate check (unless a root certificate file
               exists: then the chain is verified, as libpq does)
  verify-ca    TLS, certificate chain verified against sslrootcert
  verify-full  verify-ca plus host name check
"""
from __future__ import annotations

import asyncio
import os
import ssl

from mypgdriver import exceptions
from mypgdriver.protocol.coreproto import ssl_request_message

_TLS_VERSIONS = {
    'TLSv1': ssl.TLSVersion.TLSv1,
    'TLSv1.1': ssl.TLSVersion.TLSv1_1,
    'TLSv1.2': ssl.TLSVersion.TLSv1_2,
    'TLSv1.3': ssl.TLSVersion.TLSv1_3,
}
_ALPN = 'postgresql'


def _postgresql_dir() -> str:
    return os.path.join(os.path.expanduser('~'), '.postgresql')


def make_ssl_context(params, *, direct: bool = False) -> ssl.SSLContext:
    """The SSLContext for `params` (a ConnectParams), following libpq's defaults.

    A context passed by the caller (connect(ssl=ctx)) is used as is.
    """
    if params.ssl is not None:
        ctx = params.ssl
        if direct:
            _set_alpn(ctx)
        return ctx
    mode = params.sslmode
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = _TLS_VERSIONS[params.ssl_min_protocol_version]
    if params.ssl_max_protocol_version:
        ctx.maximum_version = _TLS_VERSIONS[params.ssl_max_protocol_version]
        if ctx.maximum_version < ctx.minimum_version:
            raise exceptions.ClientConfigurationError(
                f'ssl_max_protocol_version {params.ssl_max_protocol_version} is lower than '
                f'ssl_min_protocol_version {params.ssl_min_protocol_version}')
    rootcert = params.sslrootcert or os.path.join(_postgresql_dir(), 'root.crt')
    verify = mode in ('verify-ca', 'verify-full')
    if mode == 'require' and (params.sslrootcert or os.path.exists(rootcert)):
        # libpq: with a root certificate present, require behaves as verify-ca.
        verify = True
    if verify:
        if rootcert == 'system':
            ctx.load_default_certs()
        elif os.path.exists(rootcert):
            ctx.load_verify_locations(cafile=rootcert)
        else:
            raise exceptions.ClientConfigurationError(
                f'root certificate file "{rootcert}" does not exist; either provide the '
                f'file, use sslrootcert=system, or change sslmode to disable server '
                f'certificate verification')
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.check_hostname = mode == 'verify-full'
        if params.sslcrl:
            ctx.load_verify_locations(cafile=params.sslcrl)
            ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert = params.sslcert or os.path.join(_postgresql_dir(), 'postgresql.crt')
    key = params.sslkey or os.path.join(_postgresql_dir(), 'postgresql.key')
    if os.path.exists(cert):
        try:
            ctx.load_cert_chain(cert, key, password=params.sslpassword)
        except (OSError, ssl.SSLError) as e:
            raise exceptions.ClientConfigurationError(
                f'cannot load the client certificate {cert!r} / key {key!r}: {e}') from None
    elif params.sslcert:
        raise exceptions.ClientConfigurationError(
            f'client certificate file {cert!r} does not exist')
    if direct:
        _set_alpn(ctx)
    return ctx


def _set_alpn(ctx: ssl.SSLContext) -> None:
    # Direct TLS (PostgreSQL 17+) requires the 'postgresql' ALPN protocol.
    ctx.set_alpn_protocols([_ALPN])


class _SSLRequestProtocol(asyncio.Protocol):
    """Sends SSLRequest and reads the one-byte answer."""

    def __init__(self, loop) -> None:
        self.answer = loop.create_future()
        self.extra = b''

    def connection_made(self, transport) -> None:
        transport.write(ssl_request_message())

    def data_received(self, data: bytes) -> None:
        if not self.answer.done():
            self.answer.set_result(data[:1])
            self.extra = data[1:]
        else:
            self.extra += data

    def connection_lost(self, exc) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc or ConnectionResetError(
                'server closed the connection during SSL negotiation'))
            # If connect() was cancelled nobody awaits the answer any more:
            # mark the exception retrieved so asyncio does not log it.
            self.answer.exception()


async def request_tls(loop, host: str, port: int, *, required: bool):
    """Open TCP and send an SSLRequest; return (transport, protocol, accepted).

    `accepted` is the server's 'S': the caller then runs the TLS handshake
    (start_tls) over `transport` and `protocol`.  If the server declines
    ('N') and TLS is not required, the plain transport is returned for the
    startup to continue on.
    """
    transport, neg = await loop.create_connection(lambda: _SSLRequestProtocol(loop), host, port)
    # An answer other than 'S' or 'N' fails the connection attempt with a
    # ConnectionError, as in libpq and asyncpg, for every sslmode: no
    # fallback to plain text with a peer that does not speak the protocol.
    try:
        answer = await neg.answer
        if answer == b'S':
            if neg.extra:
                # Bytes after 'S' would be read as if they had come through
                # TLS (CVE-2021-23222): refuse.
                raise ConnectionError(
                    f'PostgreSQL server at "{host}:{port}" sent unencrypted data after '
                    f'accepting SSL')
            return transport, neg, True
        if answer == b'N':
            if neg.extra:
                # A server speaks only after our StartupMessage: bytes
                # already here are no answer to it.  Refuse them now, rather
                # than send the startup and wait out the connect timeout.
                raise exceptions.ProtocolError(
                    f'PostgreSQL server at "{host}:{port}" sent unexpected data after '
                    f'declining SSL')
            if required:
                raise ConnectionError(
                    f'PostgreSQL server at "{host}:{port}" rejected SSL upgrade, '
                    f'but SSL was required')
            return transport, neg, False
        if answer == b'E':
            # A server that failed before reading the request (fork failure,
            # a very old server).  Its text came unencrypted and unauthenticated
            # before TLS, so it is not shown (CVE-2024-10977).
            raise ConnectionError(
                f'PostgreSQL server at "{host}:{port}" sent an error response to the '
                f'SSLRequest; check the server log for details')
        raise ConnectionError(
            f'PostgreSQL server at "{host}:{port}" sent an invalid answer {answer!r} to '
            f'the SSLRequest (is this a PostgreSQL server?)')
    except BaseException:
        transport.abort()
        raise


async def start_tls(loop, transport, protocol, ctx: ssl.SSLContext,
                    server_hostname: str | None):
    """The TLS handshake over a transport whose SSLRequest was accepted."""
    try:
        return await loop.start_tls(transport, protocol, ctx, server_hostname=server_hostname)
    except BaseException:
        transport.abort()
        raise


async def open_negotiated(loop, host: str, port: int, ctx: ssl.SSLContext,
                          server_hostname: str | None, *, required: bool):
    """Open TCP, ask for TLS; return (transport, is_tls).

    If the server declines and TLS is not required, the plain transport is
    returned for the startup to continue on.
    """
    transport, neg, accepted = await request_tls(loop, host, port, required=required)
    if not accepted:
        return transport, False
    return await start_tls(loop, transport, neg, ctx, server_hostname), True
