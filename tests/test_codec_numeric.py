"""numeric <-> decimal.Decimal through a live server, in both directions.

Every decoded Decimal must be exactly ``Decimal(<the server's text rendering>)``:
same digits and same exponent, so trailing zeros (the display scale) survive
and integers never come back in exponent form.
"""
from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mypgdriver import exceptions

pytestmark = pytest.mark.asyncio

# A connection fixture is reused by every example of a property test, which
# is what we want (one server round trip per example, no reconnects).
PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# PostgreSQL's limits: 16383 digits after the point, weight < 32768
# base-10000 digits (131072 decimal digits) before it.
MAX_DSCALE = 16383
MAX_INT_DIGITS = 131072

LITERALS = [
    "0", "0.0", "0.000", "-0", "-0.00", "1", "-1", "1.5", "1.500", "-1.500",
    "10", "100", "1000", "9999", "10000", "10001", "100000000", "12345678",
    "1e30", "1e-30", "-1e30", "123e10", "0.1", "0.01", "0.001", "0.0001",
    "0.00001", "-0.000001", "0.000100", "1.0001", "9999.9999", "10000.0001",
    "123456789.123456789", "-99999999999999999999.9999", "3.14159265358979323846264338327950288",
    "0.00000000000000000000000000000000000001", "1" + "0" * 100, "-1" + "0" * 99 + ".5",
    "1" * 1000 + "." + "2" * 1000,
    "NaN", "Infinity", "-Infinity",
]
# numeric has had infinities since PostgreSQL 14.
INFINITIES = ("Infinity", "-Infinity")


def skip_infinity_before_14(server_version: int) -> None:
    if server_version < 140000:
        pytest.skip("numeric infinity needs PostgreSQL 14")


def pg_text(value: Decimal) -> str:
    """How the server renders a finite Decimal stored as numeric (no exponent)."""
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "-Infinity" if value < 0 else "Infinity"
    text = format(value, "f")
    return text[1:] if value.is_zero() and text.startswith("-") else text


def assert_exact(got: Any, expected: Decimal) -> None:
    """Same type, same digits, same exponent (Decimal == ignores the last two)."""
    assert type(got) is Decimal
    if expected.is_nan():
        assert got.is_nan() and not got.is_snan()
        return
    assert got.as_tuple() == expected.as_tuple(), (got, expected)


# --- decoding what the server produced ------------------------------------------------


@pytest.mark.parametrize("literal", LITERALS)
async def test_decoded_literal_matches_server_text(conn, server_version: int,
                                                  literal: str) -> None:
    if literal in INFINITIES:
        skip_infinity_before_14(server_version)
    value, text = await conn.fetchrow(f"SELECT '{literal}'::numeric, '{literal}'::numeric::text")
    assert_exact(value, Decimal(text))


@pytest.mark.parametrize(
    "literal, expected",
    [
        ("1.500", (0, (1, 5, 0, 0), -3)),
        ("10000", (0, (1, 0, 0, 0, 0), 0)),
        ("1e30", (0, (1,) + (0,) * 30, 0)),
        ("-0.000001", (1, (1,), -6)),
        ("0.000", (0, (0,), -3)),
        ("-0", (0, (0,), 0)),  # numeric has no negative zero
        ("12345.6789", (0, (1, 2, 3, 4, 5, 6, 7, 8, 9), -4)),
        ("0.0000000000123", (0, (1, 2, 3), -13)),
    ],
)
async def test_decoded_digits_and_exponent(conn, literal: str, expected: tuple) -> None:
    value = await conn.fetchval(f"SELECT '{literal}'::numeric")
    assert value.as_tuple() == decimal.DecimalTuple(*expected)


async def test_typmod_scale_is_kept(conn, server_version: int) -> None:
    assert_exact(await conn.fetchval("SELECT $1::numeric(10, 3)", Decimal("1.5")), Decimal("1.500"))
    assert_exact(await conn.fetchval("SELECT 2.5::numeric(10, 0)"), Decimal("3"))
    if server_version >= 150000:    # negative scales came with PostgreSQL 15
        assert_exact(await conn.fetchval("SELECT 12345::numeric(10, -2)"), Decimal("12300"))


async def test_special_values_decode(conn, server_version: int) -> None:
    skip_infinity_before_14(server_version)
    nan, pinf, ninf = await conn.fetchrow(
        "SELECT 'NaN'::numeric, 'Infinity'::numeric, '-Infinity'::numeric")
    assert type(nan) is Decimal and nan.is_qnan()
    assert pinf == Decimal("Infinity") and pinf > 0
    assert ninf == Decimal("-Infinity") and ninf < 0


async def test_extreme_magnitudes_decode(conn) -> None:
    biggest = "9" * MAX_INT_DIGITS + "." + "9" * MAX_DSCALE
    value, text = await conn.fetchrow(f"SELECT '{biggest}'::numeric, '{biggest}'::numeric::text")
    assert text == biggest
    assert_exact(value, Decimal(biggest))
    tiny = await conn.fetchval(f"SELECT '1e-{MAX_DSCALE}'::numeric")
    assert tiny.as_tuple() == decimal.DecimalTuple(0, (1,), -MAX_DSCALE)
    huge = await conn.fetchval(f"SELECT '1e{MAX_INT_DIGITS - 1}'::numeric")
    assert huge.as_tuple() == decimal.DecimalTuple(0, (1,) + (0,) * (MAX_INT_DIGITS - 1), 0)


async def test_computed_values_decode(conn, server_version: int) -> None:
    # Results of arithmetic carry the server's chosen display scale.
    assert_exact(await conn.fetchval("SELECT 1::numeric / 3"), Decimal("0.33333333333333333333"))
    power, text = await conn.fetchrow("SELECT 2::numeric ^ 200, (2::numeric ^ 200)::text")
    assert power == 2 ** 200
    assert_exact(power, Decimal(text))
    # PostgreSQL 16 computes integer powers exactly, with display scale 0.
    assert text.endswith(".0000000000000000") == (server_version < 160000)
    total = await conn.fetchval("SELECT sum(x) FROM (VALUES (1.10::numeric), (2.205)) v(x)")
    assert_exact(total, Decimal("3.305"))


# --- encoding arguments -------------------------------------------------------------

ARGUMENTS = [
    Decimal("0"), Decimal("-0"), Decimal("0E-5"), Decimal("0E+5"), Decimal("-0E+1000000"),
    Decimal("1.500"),
    Decimal("-1.500"), Decimal("1E+30"), Decimal("-1E+30"), Decimal("1E-30"),
    Decimal("-0.000001"), Decimal("0.1"), Decimal("1.0000000000"), Decimal("1.23456E-8"),
    Decimal("10000"), Decimal("1E+4"), Decimal("9999.9999"), Decimal("123456789012345678901234567890.5"),
    Decimal("12.3E+7"), Decimal("0.00010000"), Decimal("-1E+3"), Decimal("99999"),
    Decimal("1E-16383"), Decimal("-9E-16383"), Decimal(f"1E+{MAX_INT_DIGITS - 1}"),
    Decimal("9" * 5000 + "." + "1" * 5000), Decimal((1, (1,) * 3000, -1500)),
]


@pytest.mark.parametrize("value", ARGUMENTS, ids=lambda v: str(v)[:40])
async def test_decimal_argument_round_trip(conn, value: Decimal) -> None:
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert text == pg_text(value)
    assert got == value
    assert_exact(got, Decimal(pg_text(value)))


async def test_trailing_zeros_survive_round_trip(conn) -> None:
    got = await conn.fetchval("SELECT $1::numeric", Decimal("1.500"))
    assert str(got) == "1.500"
    got = await conn.fetchval("SELECT $1::numeric", Decimal("-0.000001"))
    assert str(got) == "-0.000001"


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("-NaN"), Decimal("NaN123")])
async def test_nan_argument(conn, value: Decimal) -> None:
    got, is_nan = await conn.fetchrow("SELECT $1::numeric, $1::numeric = 'NaN'::numeric", value)
    assert is_nan is True
    assert got.is_qnan()


@pytest.mark.parametrize("value", [Decimal("Infinity"), Decimal("-Infinity")])
async def test_infinity_argument(conn, server_version: int, value: Decimal) -> None:
    if server_version < 140000:
        pytest.skip("numeric infinity needs PostgreSQL 14")
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert got == value
    assert text == pg_text(value)


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "0"), (1, "1"), (-1, "-1"), (9999, "9999"), (10000, "10000"), (-10001, "-10001"),
        (2 ** 63 - 1, str(2 ** 63 - 1)), (-2 ** 63, str(-2 ** 63)),
        (2 ** 63, str(2 ** 63)), (-2 ** 64 - 1, str(-2 ** 64 - 1)),
        (10 ** 100, "1" + "0" * 100), (-(10 ** 1000) + 1, "-" + "9" * 1000),
        (True, "1"), (False, "0"),
    ],
)
async def test_int_argument(conn, value: int, expected: str) -> None:
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert text == expected
    assert_exact(got, Decimal(expected))


async def test_int_beyond_python_str_limit(conn) -> None:
    # Python refuses str() of ints over 4300 digits; encoding must not need it.
    value = 7 * 10 ** 5000 + 1
    got = await conn.fetchval("SELECT $1::numeric", value)
    assert got == value
    assert got.as_tuple() == decimal.DecimalTuple(0, (7,) + (0,) * 4999 + (1,), 0)


class IndexOnly:
    """An integer-like object (like numpy.int64): usable through __index__ only."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


async def test_index_argument(conn) -> None:
    assert_exact(await conn.fetchval("SELECT $1::numeric", IndexOnly(-42)), Decimal("-42"))


@pytest.mark.parametrize(
    "value, expected",
    [
        # The float's exact binary value, as asyncpg sends it.
        (0.1, "0.1000000000000000055511151231257827021181583404541015625"),
        (0.5, "0.5"), (-2.25, "-2.25"), (1.0, "1"), (0.0, "0"), (-0.0, "0"),
        (1e22, "10000000000000000000000"), (2.0 ** -20, "0.00000095367431640625"),
    ],
)
async def test_float_argument_is_sent_exactly(conn, value: float, expected: str) -> None:
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert text == expected
    assert_exact(got, Decimal(expected))


async def test_float_specials(conn, server_version: int) -> None:
    assert (await conn.fetchval("SELECT $1::numeric", math.nan)).is_qnan()
    skip_infinity_before_14(server_version)
    assert await conn.fetchval("SELECT $1::numeric", math.inf) == Decimal("Infinity")
    assert await conn.fetchval("SELECT $1::numeric", -math.inf) == Decimal("-Infinity")


async def test_numeric_column_insert_and_select(conn) -> None:
    await conn.execute("CREATE TEMP TABLE amounts (a numeric, b numeric(12, 4))")
    values = [(Decimal("1.500"), Decimal("2.5")), (Decimal("-1E+10"), 7), (None, None)]
    for a, b in values:
        await conn.execute("INSERT INTO amounts VALUES ($1, $2)", a, b)
    rows = await conn.fetch("SELECT a, b FROM amounts")
    assert [tuple(r) for r in rows] == [
        (Decimal("1.500"), Decimal("2.5000")), (Decimal("-10000000000"), Decimal("7.0000")),
        (None, None)]
    assert str(rows[0][1]) == "2.5000"


# --- text arguments (as asyncpg takes them) ------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0.001", "0.001"), ("1.50", "1.50"), ("-0.00", "0.00"), ("+5", "5"), ("1e3", "1000"),
        ("1e-20", "0.00000000000000000001"), ("2.5E+2", "250"), (" 7.25 ", "7.25"),
        ("1_000.5", "1000.5"), ("NaN", "NaN"), ("nan", "NaN"),
        ("123456789012345678901234567890.123456789", "123456789012345678901234567890.123456789"),
    ],
)
async def test_str_argument_keeps_its_scale(conn, text: str, expected: str) -> None:
    got, as_text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", text)
    assert as_text == expected
    assert_exact(got, Decimal(expected))


@pytest.mark.parametrize("text, expected", [
    ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("inf", "Infinity")])
async def test_str_infinity_argument(conn, server_version: int, text: str,
                                     expected: str) -> None:
    if server_version < 140000:
        pytest.skip("numeric has no infinity before PostgreSQL 14")
    assert await conn.fetchval("SELECT $1::numeric::text", text) == expected


async def test_str_subclass_and_array_of_str(conn) -> None:
    class Amount(str):
        pass

    assert_exact(await conn.fetchval("SELECT $1::numeric", Amount("2.50")), Decimal("2.50"))
    got = await conn.fetchval("SELECT $1::numeric[]", ["0.001", Decimal("1.0"), 2, None])
    assert [str(v) if v is not None else None for v in got] == ["0.001", "1.0", "2", None]


async def test_str_argument_ignores_a_lenient_decimal_context(conn) -> None:
    # With InvalidOperation untrapped, Decimal('abc') would quietly be NaN.
    with decimal.localcontext() as ctx:
        ctx.traps[decimal.InvalidOperation] = False
        with pytest.raises(exceptions.DataError, match="not a valid number"):
            await conn.fetchval("SELECT $1::numeric", "abc")


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, reason",
    [
        ("abc", "not a valid number"),
        ("", "not a valid number"),
        ("1.5\x00", "not a valid number"),
        ("1,5", "not a valid number"),
        ("sNaN", "signaling NaN"),
        (b"1.5", "expected Decimal, int, float or str, got bytes"),
        ([1], "expected Decimal, int, float or str, got list"),
        (object(), "expected Decimal, int, float or str, got object"),
        (Decimal("sNaN"), "signaling NaN"),
        (Decimal("-sNaN"), "signaling NaN"),
        (Decimal("sNaN123"), "signaling NaN"),
        ("-snan", "signaling NaN"),
        (Decimal("1E-16384"), "16384 digits after the decimal point, numeric allows at most 16383"),
        (Decimal("0E-20000"), "20000 digits after the decimal point"),
        (Decimal(f"1E+{MAX_INT_DIGITS}"), "value too large for numeric"),
        (10 ** MAX_INT_DIGITS * 7, "value too large for numeric"),
    ],
    ids=["str-word", "str-empty", "str-nul", "str-comma", "str-snan", "bytes", "list", "object",
         "snan", "negative-snan", "snan-payload", "str-negative-snan", "scale", "zero-scale", "weight", "big-int"],
)
async def test_bad_argument_raises_data_error(conn, value: Any, reason: str) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await conn.fetchval("SELECT $1::numeric", value)
    message = str(info.value)
    assert "$1" in message
    assert "numeric" in message
    assert reason in message
    # Nothing half-encoded reached the server: the connection still works.
    assert await conn.fetchval("SELECT $1::numeric", Decimal("2.50")) == Decimal("2.50")


async def test_signaling_nan_array_element_raises_data_error(conn) -> None:
    # asyncpg stores NaN for it; we refuse rather than change the value
    # (see docs/migrating.rst).
    with pytest.raises(exceptions.DataError, match="signaling NaN"):
        await conn.fetchval("SELECT $1::numeric[]", [Decimal("1"), Decimal("sNaN")])
    assert (await conn.fetchval("SELECT $1::numeric[]", [Decimal("NaN")]))[0].is_nan()


async def test_bad_second_argument_is_named(conn) -> None:
    with pytest.raises(exceptions.DataError, match=r"\$2"):
        await conn.fetchval("SELECT $1::numeric + $2::numeric", 1, "two")
    assert await conn.fetchval("SELECT 1::numeric") == 1


# --- property tests ------------------------------------------------------------------

coefficients = st.one_of(
    st.integers(0, 10 ** 20), st.integers(0, 10 ** 200), st.integers(0, 10 ** 2000))


@st.composite
def finite_decimals(draw: st.DrawFn) -> Decimal:
    """Decimals of any precision whose scale and magnitude numeric can hold."""
    coefficient = draw(coefficients)
    ndigits = len(str(coefficient))
    exponent = draw(st.one_of(
        st.integers(-40, 40),
        st.integers(-MAX_DSCALE, MAX_INT_DIGITS - ndigits)))
    sign = draw(st.integers(0, 1))
    return Decimal((sign, tuple(int(c) for c in str(coefficient)), exponent))


@PROPERTY_SETTINGS
@given(value=finite_decimals())
async def test_property_decimal_round_trip(conn, value: Decimal) -> None:
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert text == pg_text(value)
    assert_exact(got, Decimal(pg_text(value)))


@PROPERTY_SETTINGS
@given(value=finite_decimals())
async def test_property_decode_of_server_parsed_text(conn, value: Decimal) -> None:
    # The server parses the literal itself, so this checks decoding apart
    # from our encoder.
    literal = str(value)
    got, text = await conn.fetchrow("SELECT $1::text::numeric, $1::text::numeric::text", literal)
    assert_exact(got, Decimal(text))
    assert got == value


@PROPERTY_SETTINGS
@given(value=st.integers(min_value=-(10 ** 400), max_value=10 ** 400))
async def test_property_int_round_trip(conn, value: int) -> None:
    got, text = await conn.fetchrow("SELECT $1::numeric, $1::numeric::text", value)
    assert text == str(value)
    assert_exact(got, Decimal(value))


@PROPERTY_SETTINGS
@given(value=st.floats(allow_nan=False, allow_infinity=False))
async def test_property_float_sent_exactly(conn, value: float) -> None:
    assume(value != 0 or math.copysign(1, value) > 0)  # -0.0 comes back as 0
    expected = Decimal(value)
    # Very small floats need more than 16383 digits after the point.
    assume(-expected.as_tuple().exponent <= MAX_DSCALE)
    got = await conn.fetchval("SELECT $1::numeric", value)
    assert got == expected


# --- compared with asyncpg ------------------------------------------------------------


async def test_same_values_as_asyncpg(conn, connect_kwargs, server_version: int) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    other = await asyncpg.connect(**connect_kwargs)
    try:
        for literal in LITERALS:
            if literal in INFINITIES and server_version < 140000:
                continue
            ours = await conn.fetchval(f"SELECT '{literal}'::numeric")
            theirs = await other.fetchval(f"SELECT '{literal}'::numeric")
            assert type(ours) is type(theirs)
            if theirs.is_nan():
                assert ours.is_nan()
            else:
                # Equal values; asyncpg may use another exponent (10000 comes
                # back as Decimal('1E+4') there, Decimal('10000') here).
                assert ours == theirs, literal
        # asyncpg refuses zero with a huge exponent, which we send as 0.
        same = [v for v in ARGUMENTS[:-4] if not (v.is_zero() and v.as_tuple().exponent > 10)]
        for value in same + [0.1, -2.5, 12, 10 ** 30, True]:
            ours = await conn.fetchval("SELECT $1::numeric::text", value)
            theirs = await other.fetchval("SELECT $1::numeric::text", value)
            assert ours == theirs, value
    finally:
        await other.close()
