"""Password authentication: md5, SCRAM-SHA-256 and SCRAM-SHA-256-PLUS.

Pure functions and one small state object; the protocol state machine does
the message framing and calls in here (PostgreSQL docs, "Message Flow:
SASL Authentication" and "SASL Authentication").

Errors: a server message that does not follow the SCRAM grammar raises
`ProtocolError`; everything else (a failed check, an unsupported
mechanism, a configuration that cannot be met) raises `InterfaceError`;
a Python that cannot compute MD5 (FIPS) raises `InternalClientError`.
No message ever contains the password or anything derived from it.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import stringprep
import unicodedata
from collections.abc import Iterable

from mypgdriver.connecting.tls_certificates import tls_server_end_point

from ..exceptions import InterfaceError, InternalClientError, ProtocolError

__all__ = [
    "SCRAM_SHA_256",
    "SCRAM_SHA_256_PLUS",
    "ScramSha256",
    "check_authentication_ok",
    "check_password_auth_allowed",
    "choose_sasl_mechanism",
    "md5_password",
    "saslprep",
    "start_scram_exchange",
]

SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_256_PLUS = "SCRAM-SHA-256-PLUS"

CHANNEL_BINDING_MODES = ("disable", "prefer", "require")

# The most PBKDF2 iterations the client agrees to compute.  PostgreSQL
# accepts scram_iterations up to INT_MAX (PG 16+), but the key is derived on
# the event-loop thread, where 2**31-1 iterations would block every task of
# the process for minutes and no timeout could fire.  One million is 244
# times PostgreSQL's default of 4096 and above OWASP's 600,000 for
# PBKDF2-HMAC-SHA256, and costs about 0.25 s of one 2020s x86 core; a server
# asking for more is refused with a clear error instead.
MAX_SCRAM_ITERATIONS = 1_000_000

# 18 random bytes, as libpq and the server use: 24 base64 characters.
_NONCE_BYTES = 18


# --- md5 ------------------------------------------------------------------

def md5_password(user: str, password: str, salt: bytes) -> bytes:
    """Answer an AuthenticationMD5Password request.

    Returns ``b"md5" + md5hex(md5hex(password + user) + salt)``, the body of
    the PasswordMessage without its trailing NUL.  `user` is the user name
    from the startup message.
    """
    if len(salt) != 4:
        raise ProtocolError(
            f"md5 authentication salt must be 4 bytes, got {len(salt)}")
    try:
        inner = hashlib.md5(password.encode() + user.encode()).hexdigest()
        outer = hashlib.md5(inner.encode("ascii") + salt).hexdigest()
    except ValueError as e:
        # A FIPS build of OpenSSL refuses MD5 (asyncpg reports this as an
        # InternalClientError as well).
        raise InternalClientError(
            f"the server requested md5 authentication, but this Python cannot "
            f"compute MD5 ({e}); use scram-sha-256 on the server") from e
    return b"md5" + outer.encode("ascii")


# --- SASLprep ---------------------------------------------------------------

def _is_prohibited(ch: str) -> bool:
    # RFC 4013 section 2.3 plus A.1: PostgreSQL treats passwords as stored
    # strings, so code points unassigned in Unicode 3.2 are refused too.
    return (stringprep.in_table_c12(ch)
            or stringprep.in_table_c21_c22(ch)
            or stringprep.in_table_c3(ch)
            or stringprep.in_table_c4(ch)
            or stringprep.in_table_c5(ch)
            or stringprep.in_table_c6(ch)
            or stringprep.in_table_c7(ch)
            or stringprep.in_table_c8(ch)
            or stringprep.in_table_c9(ch)
            or stringprep.in_table_a1(ch))


def _passes_bidi_rules(chars: list[str]) -> bool:
    # RFC 3454 section 6: a string with any RandALCat character has no LCat
    # character and starts and ends with a RandALCat character.
    if not any(stringprep.in_table_d1(ch) for ch in chars):
        return True
    if any(stringprep.in_table_d2(ch) for ch in chars):
        return False
    return stringprep.in_table_d1(chars[0]) and stringprep.in_table_d1(chars[-1])


def saslprep(password: str) -> str:
    """Normalize a password the way PostgreSQL does before SCRAM hashing.

    This is RFC 4013 SASLprep as implemented by PostgreSQL
    (src/common/saslprep.c), which both the server (when it stores the
    verifier) and libpq (when it logs in) use.  The client must reproduce it
    exactly, quirks included, or the derived keys differ and login fails:

    * a pure-ASCII password is returned unchanged;
    * a password that is not valid Unicode (here: a str holding lone
      surrogates, e.g. bytes decoded with ``surrogateescape``), that maps to
      the empty string, or that fails the prohibited-character or bidi
      checks is returned unchanged instead of being rejected;
    * the prohibited-character and bidi checks look at the string after the
      mapping step but *before* NFKC, not at the output as RFC 3454 says.
      This differs from a textbook SASLprep for about 900 code points (for
      example U+1D2C, unassigned in Unicode 3.2, whose NFKC form is "A").
    """
    if password.isascii():
        return password
    try:
        password.encode("utf-8")
    except UnicodeEncodeError:
        return password

    # RFC 4013 section 2.1.  U+200B is in both tables; PostgreSQL checks the
    # space table first, so it becomes a space rather than disappearing.
    mapped = []
    for ch in password:
        if stringprep.in_table_c12(ch):
            mapped.append(" ")
        elif not stringprep.in_table_b1(ch):
            mapped.append(ch)
    if not mapped:
        return password

    if any(_is_prohibited(ch) for ch in mapped) or not _passes_bidi_rules(mapped):
        return password
    return unicodedata.normalize("NFKC", "".join(mapped))


# --- SCRAM-SHA-256 ------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _escape_saslname(name: str) -> str:
    # RFC 5802 section 5.1: ',' and '=' are escaped in user names.
    return name.replace("=", "=3D").replace(",", "=2C")


def _is_printable_nonce(nonce: str) -> bool:
    # RFC 5802 section 7: printable = %x21-2B / %x2D-7E (no comma).
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def _split_attributes(message: bytes, what: str) -> list[tuple[str, str]]:
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(f"malformed SCRAM {what}: not valid UTF-8") from None
    attributes = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isascii() or not part[0].isalpha():
            raise ProtocolError(
                f"malformed SCRAM {what}: expected attribute=value, got {part[:20]!r}")
        attributes.append((part[0], part[2:]))
    return attributes


def _reject_mandatory_extension(attributes: list[tuple[str, str]], what: str) -> None:
    # RFC 5802 section 5.1: "m" announces an extension the client must
    # understand; none is defined, so the exchange cannot continue.
    if attributes and attributes[0][0] == "m":
        raise ProtocolError(
            f"SCRAM {what} requires an unsupported mandatory extension")


def _take(attributes: list[tuple[str, str]], index: int, name: str, what: str) -> str:
    if index >= len(attributes) or attributes[index][0] != name:
        raise ProtocolError(f"malformed SCRAM {what}: attribute {name!r} expected")
    return attributes[index][1]


def _password_bytes(password: str) -> bytes:
    """SASLprep the password and encode it for Hi()."""
    prepared = saslprep(password)
    # A str carrying surrogate escapes came from non-UTF-8 bytes; send those
    # bytes, as PostgreSQL hashes a non-UTF-8 password as is.  The encode
    # error is not chained: it would carry the password along.
    encoded = None
    try:
        encoded = prepared.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        pass
    if encoded is None:
        raise InterfaceError(
            "the password contains lone surrogate code points that do not "
            "stand for bytes (only U+DC80..U+DCFF from 'surrogateescape' do)")
    return encoded


def _xor(left: bytes, right: bytes) -> bytes:
    return (int.from_bytes(left, "big") ^ int.from_bytes(right, "big")).to_bytes(len(left), "big")


class ScramSha256:
    """Client side of one SCRAM-SHA-256 / SCRAM-SHA-256-PLUS exchange.

    Call order: `client_first_message` (sent in SASLInitialResponse),
    `client_final_message` with the AuthenticationSASLContinue data (sent in
    SASLResponse), `verify_server_final` with the AuthenticationSASLFinal
    data.  Each object serves one exchange and is then spent; the password
    is dropped as soon as the proof is computed.

    `password` is a str; a str holding surrogate escapes stands for a
    password that is not valid UTF-8 and is sent as the original bytes.
    `channel_binding_data` (from `tls_server_end_point`) selects
    SCRAM-SHA-256-PLUS.  Without it, `client_supports_binding` says TLS is
    in use but the server did not offer -PLUS, which the gs2 header reports
    ("y") so the server can detect a downgrade.  PostgreSQL ignores the SCRAM
    user name in favour of the startup packet's, so it is empty by default.
    `nonce` is for tests only; normally 18 random bytes are used.
    """

    mechanism: str

    def __init__(self, password: str, *, channel_binding_data: bytes | None = None,
                 client_supports_binding: bool = False, username: str = "",
                 nonce: str | None = None) -> None:
        if channel_binding_data is not None:
            self.mechanism = SCRAM_SHA_256_PLUS
            gs2_header = "p=tls-server-end-point,,"
            self._cbind_input = gs2_header.encode("ascii") + bytes(channel_binding_data)
        else:
            self.mechanism = SCRAM_SHA_256
            gs2_header = "y,," if client_supports_binding else "n,,"
            self._cbind_input = gs2_header.encode("ascii")
        self._gs2_header = gs2_header

        if nonce is None:
            nonce = _b64(secrets.token_bytes(_NONCE_BYTES))
        elif not _is_printable_nonce(nonce):
            raise InterfaceError("SCRAM client nonce must be printable ASCII without ','")
        self._client_nonce = nonce
        self._client_first_bare = f"n={_escape_saslname(username)},r={nonce}"

        self._password: str | None = password
        self._expected_server_signature: bytes | None = None
        self._first_sent = False
        self._finished = False

    def __repr__(self) -> str:
        return f"<ScramSha256 mechanism={self.mechanism!r} finished={self._finished}>"

    @property
    def finished(self) -> bool:
        """True once the server's signature has been verified."""
        return self._finished

    @property
    def channel_bound(self) -> bool:
        """True once a -PLUS exchange has completed: the server is bound to the TLS channel."""
        return self._finished and self.mechanism == SCRAM_SHA_256_PLUS

    def client_first_message(self) -> bytes:
        """The client-first-message, e.g. ``b"n,,n=,r=<nonce>"``."""
        self._first_sent = True
        return (self._gs2_header + self._client_first_bare).encode("utf-8")

    def client_final_message(self, server_first: bytes) -> bytes:
        """Check the server-first-message and return the client-final-message.

        Raises `InterfaceError` if the server's nonce does not extend ours or
        the iteration count is out of range, `ProtocolError` if the message
        is malformed or arrives out of order.
        """
        if not self._first_sent or self._password is None:
            raise ProtocolError(
                "unexpected SCRAM server-first-message at this point of the exchange")
        what = "server-first-message"
        attributes = _split_attributes(bytes(server_first), what)
        _reject_mandatory_extension(attributes, what)
        combined_nonce = _take(attributes, 0, "r", what)
        salt_b64 = _take(attributes, 1, "s", what)
        iterations_text = _take(attributes, 2, "i", what)
        # Further attributes are extensions, which RFC 5802 says to ignore.

        # The server must echo our nonce and add a part of its own (RFC 5802
        # section 5.1); one that adds nothing gives no replay protection.
        ours = self._client_nonce.encode("ascii")
        theirs = combined_nonce.encode("utf-8")
        if (len(theirs) <= len(ours)
                or not hmac.compare_digest(theirs[:len(ours)], ours)
                or not _is_printable_nonce(combined_nonce)):
            raise InterfaceError(
                "invalid SCRAM server-first-message: the server nonce does not "
                "start with the client nonce followed by the server's own part")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(
                "malformed SCRAM server-first-message: salt is not valid base64") from None
        if not salt:
            raise ProtocolError("malformed SCRAM server-first-message: empty salt")
        if not (iterations_text.isascii() and iterations_text.isdigit()):
            raise InterfaceError(
                f"invalid SCRAM iteration count {iterations_text[:20]!r}: not a number")
        # The length check first: int() refuses strings of over 4300 digits
        # with a ValueError of its own.
        iterations = int(iterations_text) if len(iterations_text) <= 10 else None
        if iterations is not None and iterations < 1:
            raise InterfaceError(
                f"SCRAM iteration count {iterations} is too low (minimum 1)")
        if iterations is None or iterations > MAX_SCRAM_ITERATIONS:
            raise InterfaceError(
                f"the server asks for {iterations_text[:20]} SCRAM iterations, above "
                f"the maximum {MAX_SCRAM_ITERATIONS:,} that mypgdriver computes "
                f"(PostgreSQL's default is 4096): the key derivation would block "
                f"the event loop; lower the server's scram_iterations and reset "
                f"the role's password")

        without_proof = f"c={_b64(self._cbind_input)},r={combined_nonce}"
        auth_message = ",".join((
            self._client_first_bare,
            bytes(server_first).decode("utf-8"),
            without_proof,
        )).encode("utf-8")

        password = self._password
        self._password = None
        prepared = _password_bytes(password)
        salted = hashlib.pbkdf2_hmac("sha256", prepared, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        stored_key = hashlib.sha256(client_key).digest()
        client_signature = hmac.digest(stored_key, auth_message, "sha256")
        proof = _xor(client_key, client_signature)
        server_key = hmac.digest(salted, b"Server Key", "sha256")
        self._expected_server_signature = hmac.digest(server_key, auth_message, "sha256")

        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server-final-message; return only if the server proved it knows the verifier.

        Raises `InterfaceError` on a server error ("e=...") or a signature
        mismatch, `ProtocolError` if the message is malformed or early.
        """
        expected = self._expected_server_signature
        if expected is None or self._finished:
            raise ProtocolError(
                "unexpected SCRAM server-final-message at this point of the exchange")
        what = "server-final-message"
        attributes = _split_attributes(bytes(server_final), what)
        _reject_mandatory_extension(attributes, what)
        if attributes[0][0] == "e":
            raise InterfaceError(
                f"SCRAM authentication failed: server error {attributes[0][1]!r}")
        verifier_b64 = _take(attributes, 0, "v", what)
        try:
            signature = base64.b64decode(verifier_b64, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(
                "malformed SCRAM server-final-message: server signature is not "
                "valid base64") from None
        if not hmac.compare_digest(signature, expected):
            raise InterfaceError(
                "SCRAM server signature mismatch: the server does not know the "
                "password's verifier (or the connection was tampered with)")
        self._expected_server_signature = None
        self._finished = True


# --- choosing the mechanism -------------------------------------------------------

def _check_channel_binding_mode(channel_binding: str) -> None:
    if channel_binding not in CHANNEL_BINDING_MODES:
        raise InterfaceError(
            f"invalid channel_binding {channel_binding!r}: expected one of "
            + ", ".join(repr(mode) for mode in CHANNEL_BINDING_MODES))


def choose_sasl_mechanism(offered: Iterable[str], *, channel_binding: str,
                          tls_cert_der: bytes | None) -> str:
    """Pick the SASL mechanism to answer an AuthenticationSASL request with.

    `offered` is the server's list, `channel_binding` the connection's
    'disable' / 'prefer' / 'require' setting, `tls_cert_der` the server's
    certificate when the connection uses TLS (None otherwise).  Returns
    ``"SCRAM-SHA-256-PLUS"`` or ``"SCRAM-SHA-256"``; raises `InterfaceError`
    when no offered mechanism is usable under that setting.  Follows libpq.
    """
    _check_channel_binding_mode(channel_binding)
    offered = list(offered)
    tls = tls_cert_der is not None
    if SCRAM_SHA_256_PLUS in offered:
        if not tls:
            # The server only offers -PLUS on TLS connections: something in
            # between stripped TLS, and the server would refuse us anyway.
            raise InterfaceError(
                "server offered SCRAM-SHA-256-PLUS authentication over a non-TLS connection")
        if channel_binding != "disable":
            return SCRAM_SHA_256_PLUS
    if channel_binding == "require":
        if not tls:
            raise InterfaceError(
                "channel binding is required, but the connection does not use TLS")
        raise InterfaceError(
            "channel binding is required, but the server did not offer "
            "SCRAM-SHA-256-PLUS (offered: " + (", ".join(offered) or "nothing") + ")")
    if SCRAM_SHA_256 in offered:
        return SCRAM_SHA_256
    raise InterfaceError(
        "none of the server's SASL authentication mechanisms are supported: "
        + (", ".join(offered) or "(empty list)"))


def start_scram_exchange(offered: Iterable[str], password: str, *, channel_binding: str,
                         tls_cert_der: bytes | None, username: str = "") -> ScramSha256:
    """Choose the mechanism and set up the exchange for it.

    Combines `choose_sasl_mechanism`, `tls_server_end_point` and the gs2
    header rule: on TLS without -PLUS the client says it supports binding
    ("y") unless channel_binding is 'disable' (as libpq does).
    """
    mechanism = choose_sasl_mechanism(
        offered, channel_binding=channel_binding, tls_cert_der=tls_cert_der)
    if mechanism == SCRAM_SHA_256_PLUS:
        assert tls_cert_der is not None
        return ScramSha256(password, channel_binding_data=tls_server_end_point(tls_cert_der),
                           username=username)
    supports_binding = tls_cert_der is not None and channel_binding != "disable"
    return ScramSha256(password, client_supports_binding=supports_binding, username=username)


# --- checks for the state machine ---------------------------------------------------

def check_password_auth_allowed(method: str, *, channel_binding: str) -> None:
    """Refuse a non-SASL authentication request when channel binding is required.

    With channel_binding='require' only SCRAM-SHA-256-PLUS authenticates the
    server; answering a cleartext or md5 request would hand the password (or
    a replayable hash) to whoever asked.  `method` names the request in the
    error, e.g. "md5" or "password".
    """
    _check_channel_binding_mode(channel_binding)
    if channel_binding == "require":
        raise InterfaceError(
            f"channel binding is required, but the server requested {method} "
            "authentication, which does not support it")


def check_authentication_ok(scram: ScramSha256 | None, *, channel_binding: str) -> None:
    """Validate an AuthenticationOk against the exchange that preceded it.

    A server (or impostor) may skip straight to AuthenticationOk; accepting
    that after SCRAM started would skip the server's proof, and with
    channel_binding='require' it would skip binding altogether.  Pass the
    exchange object, or None if no SASL exchange took place.
    """
    _check_channel_binding_mode(channel_binding)
    if scram is not None and not scram.finished:
        raise InterfaceError(
            "server sent AuthenticationOk before the SCRAM exchange completed")
    if channel_binding == "require" and (scram is None or not scram.channel_bound):
        raise InterfaceError(
            "channel binding is required, but the server authenticated the "
            "client without channel binding")
