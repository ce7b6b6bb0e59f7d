"""date, time, timetz, timestamp, timestamptz and interval through a live server.

Values are checked both ways and against the server's own text rendering
(session TimeZone UTC, DateStyle ISO, IntervalStyle postgres), and the mapping
is compared with asyncpg's on the same server.
"""
from __future__ import annotations

import datetime as dt
import zoneinfo
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mypgdriver import exceptions

pytestmark = pytest.mark.asyncio

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

UTC = dt.timezone.utc


def tz(hours: int = 0, minutes: int = 0, seconds: int = 0) -> dt.timezone:
    return dt.timezone(dt.timedelta(hours=hours, minutes=minutes, seconds=seconds))


@pytest.fixture
async def db(conn):
    """`conn` with fixed text-rendering settings, so expected strings are exact."""
    await conn.execute(
        "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'")
    return conn


def pg_fraction(microsecond: int) -> str:
    return f".{microsecond:06d}".rstrip("0") if microsecond else ""


def pg_date(value: dt.date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def pg_time(value: dt.time | dt.datetime) -> str:
    return (f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
            + pg_fraction(value.microsecond))


def pg_offset(offset: dt.timedelta) -> str:
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    if minutes or seconds:
        text += f":{minutes:02d}"
    if seconds:
        text += f":{seconds:02d}"
    return text


def exact_seconds(value: dt.timedelta) -> Decimal:
    return Decimal(value.days * 86400 + value.seconds) + Decimal(value.microseconds).scaleb(-6)


def assert_same(got: Any, expected: Any) -> None:
    """Equal, same type and same tzinfo (aware == ignores which zone)."""
    assert type(got) is type(expected), (got, expected)
    assert got == expected, (got, expected)
    if isinstance(expected, (dt.datetime, dt.time)):
        assert got.tzinfo == expected.tzinfo, (got, expected)
        if expected.tzinfo is not None:
            assert got.utcoffset() == expected.utcoffset()


# --- date ---------------------------------------------------------------------------

DATES = [
    dt.date(2000, 1, 1), dt.date(1999, 12, 31), dt.date(2000, 2, 29), dt.date(1900, 2, 28),
    dt.date(1900, 3, 1), dt.date(2100, 3, 1), dt.date(1970, 1, 1), dt.date(1582, 10, 4),
    dt.date(1582, 10, 15), dt.date(1, 1, 2), dt.date(9999, 12, 30), dt.date(2024, 12, 31),
    dt.date(400, 2, 29), dt.date(1600, 12, 31),
]


@pytest.mark.parametrize("value", DATES, ids=str)
async def test_date_round_trip(db, value: dt.date) -> None:
    got, text = await db.fetchrow("SELECT $1::date, $1::date::text", value)
    assert_same(got, value)
    assert text == pg_date(value)
    assert_same(await db.fetchval(f"SELECT '{pg_date(value)}'::date"), value)


async def test_date_infinity(db) -> None:
    assert await db.fetchrow("SELECT 'infinity'::date, '-infinity'::date") == (
        dt.date.max, dt.date.min)
    assert await db.fetchrow("SELECT $1::date::text, $2::date::text", dt.date.max, dt.date.min) == (
        "infinity", "-infinity")


async def test_datetime_sent_as_date_keeps_its_date(db) -> None:
    assert_same(await db.fetchval("SELECT $1::date", dt.datetime(2020, 5, 6, 23, 59)),
                dt.date(2020, 5, 6))


@pytest.mark.parametrize("literal, shown", [
    ("10000-01-01", "10000-01-01"), ("0001-12-31 BC", "0001-12-31 BC"),
    ("4713-01-01 BC", "4713-01-01 BC"), ("5874897-12-31", "5874897-12-31"),
])
async def test_date_out_of_python_range_raises_value_error(db, literal: str, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        await db.fetchval(f"SELECT '{literal}'::date")
    assert str(info.value) == (
        f"date value {shown} is out of the range of datetime.date (years 1 to 9999)")
    assert await db.fetchval("SELECT '2001-02-03'::date") == dt.date(2001, 2, 3)


# --- timestamp ----------------------------------------------------------------------

TIMESTAMPS = [
    dt.datetime(2000, 1, 1), dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2020, 2, 29, 12, 34, 56, 789012), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
    dt.datetime(1, 1, 1, 0, 0, 0, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999998),
    dt.datetime(1, 1, 2), dt.datetime(1900, 3, 1, 1, 2, 3, 400000), dt.datetime(2038, 1, 19, 3, 14, 8),
]


def pg_timestamp(value: dt.datetime) -> str:
    return f"{pg_date(value)} {pg_time(value)}"


@pytest.mark.parametrize("value", TIMESTAMPS, ids=str)
async def test_timestamp_round_trip(db, value: dt.datetime) -> None:
    got, text = await db.fetchrow("SELECT $1::timestamp, $1::timestamp::text", value)
    assert_same(got, value)
    assert text == pg_timestamp(value)
    assert_same(await db.fetchval(f"SELECT '{pg_timestamp(value)}'::timestamp"), value)


async def test_timestamp_infinity(db) -> None:
    assert await db.fetchrow("SELECT 'infinity'::timestamp, '-infinity'::timestamp") == (
        dt.datetime.max, dt.datetime.min)
    assert await db.fetchrow(
        "SELECT $1::timestamp::text, $2::timestamp::text", dt.datetime.max, dt.datetime.min,
    ) == ("infinity", "-infinity")
    # Only the exact extremes mean infinity.
    near_max = dt.datetime.max - dt.timedelta(microseconds=1)
    assert await db.fetchval("SELECT $1::timestamp::text", near_max) == "9999-12-31 23:59:59.999998"


async def test_date_sent_as_timestamp_is_midnight(db) -> None:
    assert_same(await db.fetchval("SELECT $1::timestamp", dt.date(2020, 5, 6)),
                dt.datetime(2020, 5, 6))


@pytest.mark.parametrize("literal, shown", [
    ("10000-01-01", "10000-01-01 00:00:00"),
    ("0001-12-31 23:59:59.999999 BC", "0001-12-31 23:59:59 BC"),
    ("294276-12-31 23:59:59", "294276-12-31 23:59:59"),
    ("4713-01-01 00:00 BC", "4713-01-01 00:00:00 BC"),
])
async def test_timestamp_out_of_python_range_raises_overflow_error(db, literal: str, shown: str) -> None:
    with pytest.raises(OverflowError) as info:
        await db.fetchval(f"SELECT '{literal}'::timestamp")
    assert str(info.value) == (
        f"timestamp value {shown} is out of the range of datetime.datetime (years 1 to 9999)")
    assert await db.fetchval("SELECT 1") == 1


async def test_aware_datetime_as_timestamp_is_refused(db) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval("SELECT $1::timestamp", dt.datetime(2020, 1, 1, tzinfo=UTC))
    assert "$1" in str(info.value)
    assert "an aware datetime cannot be sent as timestamp without time zone" in str(info.value)
    assert await db.fetchval("SELECT 1") == 1


# --- timestamptz --------------------------------------------------------------------


@pytest.mark.parametrize("value", TIMESTAMPS, ids=str)
async def test_timestamptz_round_trip_in_utc(db, value: dt.datetime) -> None:
    aware = value.replace(tzinfo=UTC)
    got, text = await db.fetchrow("SELECT $1::timestamptz, $1::timestamptz::text", aware)
    assert_same(got, aware)
    assert text == pg_timestamp(value) + "+00"


@pytest.mark.parametrize("value, expected", [
    (dt.datetime(2020, 2, 29, 12, 0, tzinfo=tz(5, 30)), dt.datetime(2020, 2, 29, 6, 30, tzinfo=UTC)),
    (dt.datetime(2020, 1, 1, 0, 0, tzinfo=tz(-8)), dt.datetime(2020, 1, 1, 8, 0, tzinfo=UTC)),
    (dt.datetime(2020, 1, 1, tzinfo=tz(0, 0, 17)), dt.datetime(2019, 12, 31, 23, 59, 43, tzinfo=UTC)),
    (dt.datetime(2020, 6, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
     dt.datetime(2020, 6, 1, 10, tzinfo=UTC)),
    (dt.datetime(2020, 12, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
     dt.datetime(2020, 12, 1, 11, tzinfo=UTC)),
    # The repeated hour at the end of DST: fold picks the second one.
    (dt.datetime(2020, 10, 25, 2, 30, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"), fold=1),
     dt.datetime(2020, 10, 25, 1, 30, tzinfo=UTC)),
    (dt.datetime(1, 1, 1, 0, 0, tzinfo=tz(-1)), dt.datetime(1, 1, 1, 1, 0, tzinfo=UTC)),
])
async def test_aware_datetime_is_converted_to_utc(db, value: dt.datetime, expected: dt.datetime) -> None:
    assert_same(await db.fetchval("SELECT $1::timestamptz", value), expected)


async def test_naive_datetime_as_timestamptz_is_taken_as_utc(db) -> None:
    await db.execute("SET TimeZone = 'America/New_York'")
    got, text = await db.fetchrow(
        "SELECT $1::timestamptz, ($1::timestamptz AT TIME ZONE 'UTC')::text",
        dt.datetime(2020, 7, 1, 12, 30))
    assert_same(got, dt.datetime(2020, 7, 1, 12, 30, tzinfo=UTC))
    assert text == "2020-07-01 12:30:00"


async def test_date_as_timestamptz_is_utc_midnight(db) -> None:
    assert_same(await db.fetchval("SELECT $1::timestamptz", dt.date(2020, 7, 1)),
                dt.datetime(2020, 7, 1, tzinfo=UTC))


async def test_timestamptz_decodes_in_utc_whatever_the_session_zone(db) -> None:
    await db.execute("SET TimeZone = 'Asia/Kolkata'")
    got = await db.fetchval("SELECT '2020-01-01 05:30:00+05:30'::timestamptz")
    assert_same(got, dt.datetime(2020, 1, 1, 0, 0, tzinfo=UTC))


async def test_timestamptz_before_year_1_in_utc(db) -> None:
    # datetime.min at UTC+01:00 is 1 BC in UTC: the server takes it, but it
    # cannot come back as a datetime.
    value = dt.datetime(1, 1, 1, 0, 30, tzinfo=tz(1))
    assert await db.fetchval("SELECT $1::timestamptz::text", value) == "0001-12-31 23:30:00+00 BC"
    with pytest.raises(OverflowError, match="timestamptz value 0001-12-31 23:30:00 BC is out"):
        await db.fetchval("SELECT $1::timestamptz", value)


async def test_timestamptz_infinity(db) -> None:
    # As with asyncpg, infinity decodes to the naive extremes.
    assert await db.fetchrow("SELECT 'infinity'::timestamptz, '-infinity'::timestamptz") == (
        dt.datetime.max, dt.datetime.min)
    for value, text in [
        (dt.datetime.max, "infinity"), (dt.datetime.min, "-infinity"),
        (dt.datetime.max.replace(tzinfo=UTC), "infinity"),
        (dt.datetime.min.replace(tzinfo=UTC), "-infinity"),
    ]:
        assert await db.fetchval("SELECT $1::timestamptz::text", value) == text


# --- time and timetz ----------------------------------------------------------------

TIMES = [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0, 0, 1), dt.time(1, 2, 3, 450000)]


@pytest.mark.parametrize("value", TIMES, ids=str)
async def test_time_round_trip(db, value: dt.time) -> None:
    got, text = await db.fetchrow("SELECT $1::time, $1::time::text", value)
    assert_same(got, value)
    assert text == pg_time(value)
    assert_same(await db.fetchval(f"SELECT '{pg_time(value)}'::time"), value)


async def test_time_ignores_tzinfo_and_takes_datetime_time_of_day(db) -> None:
    assert_same(await db.fetchval("SELECT $1::time", dt.time(1, 2, tzinfo=tz(3))), dt.time(1, 2))
    assert_same(await db.fetchval("SELECT $1::time", dt.datetime(2020, 1, 1, 4, 5, 6, 7)),
                dt.time(4, 5, 6, 7))


async def test_time_24_00_raises_value_error(db) -> None:
    with pytest.raises(ValueError, match="time value 24:00:00 cannot be represented"):
        await db.fetchval("SELECT '24:00'::time")
    assert await db.fetchval("SELECT '23:00'::time") == dt.time(23)


@pytest.mark.parametrize("value", [
    dt.time(12, 0, tzinfo=UTC), dt.time(12, 0, tzinfo=tz(5, 30)), dt.time(0, 0, 0, 1, tzinfo=tz(-3, -30)),
    dt.time(23, 59, 59, 999999, tzinfo=tz(15, 59, 59)), dt.time(8, tzinfo=tz(-15, -59, -59)),
    dt.time(8, tzinfo=tz(5, 30, 15)),
], ids=str)
async def test_timetz_round_trip(db, value: dt.time) -> None:
    got, text = await db.fetchrow("SELECT $1::timetz, $1::timetz::text", value)
    assert_same(got, value)
    assert text == pg_time(value) + pg_offset(value.utcoffset())


async def test_timetz_literal_offsets(db) -> None:
    got = await db.fetchrow(
        "SELECT '12:00+05:30'::timetz, '12:00-08'::timetz, '12:00+05:30:15'::timetz, '12:00Z'::timetz")
    assert [g.utcoffset() for g in got] == [
        dt.timedelta(hours=5, minutes=30), dt.timedelta(hours=-8),
        dt.timedelta(hours=5, minutes=30, seconds=15), dt.timedelta(0)]
    assert all(g.replace(tzinfo=None) == dt.time(12) for g in got)
    assert got[3].tzinfo is UTC


async def test_aware_datetime_as_timetz_uses_its_offset(db) -> None:
    value = dt.datetime(2020, 6, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    assert await db.fetchval("SELECT $1::timetz::text", value) == "12:00:00+02"


@pytest.mark.parametrize("value, reason", [
    (dt.time(1, 2), "a naive time is ambiguous for time with time zone"),
    (dt.time(1, 2, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")), "has no fixed UTC offset without a date"),
    (dt.time(1, 2, tzinfo=dt.timezone(dt.timedelta(microseconds=5))), "with microseconds"),
    (dt.time(1, 2, tzinfo=tz(16)), "UTC offset out of range"),
    ("01:02+00", "expected a datetime.time instance, got str"),
], ids=["naive", "zoneinfo", "microseconds", "offset", "str"])
async def test_timetz_bad_argument(db, value: Any, reason: str) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval("SELECT $1::timetz", value)
    assert "$1" in str(info.value) and "timetz" in str(info.value)
    assert reason in str(info.value)
    assert await db.fetchval("SELECT 1") == 1


# --- interval -----------------------------------------------------------------------

@pytest.mark.parametrize("literal, expected", [
    ("1 day", dt.timedelta(days=1)),
    ("1 month", dt.timedelta(days=30)),
    ("11 months", dt.timedelta(days=330)),
    ("1 year", dt.timedelta(days=365)),
    ("1 year 1 month", dt.timedelta(days=395)),
    ("-13 months -1 day", dt.timedelta(days=-396)),
    ("25 hours", dt.timedelta(hours=25)),
    ("-1 day +00:00:05", dt.timedelta(days=-1, seconds=5)),
    ("-00:00:00.000001", dt.timedelta(microseconds=-1)),
    ("1 mon -1 day -2 hours", dt.timedelta(days=29, hours=-2)),
    ("2562047788:00:54.775807", dt.timedelta(microseconds=2 ** 63 - 1)),
    ("-2562047788:00:54.775807", dt.timedelta(microseconds=-(2 ** 63) + 1)),
    ("999999999 days", dt.timedelta(days=999999999)),
])
async def test_interval_decode(db, server_version: int, literal: str,
                               expected: dt.timedelta) -> None:
    if literal.lstrip("-").startswith("2562047788:") and server_version < 150000:
        pytest.skip("intervals of 2**63-1 microseconds are accepted as input from PostgreSQL 15")
    assert_same(await db.fetchval(f"SELECT '{literal}'::interval"), expected)


INTERVALS = [
    dt.timedelta(0), dt.timedelta(microseconds=1), dt.timedelta(microseconds=-1),
    dt.timedelta(days=-1, seconds=5), dt.timedelta(days=400, seconds=3661, microseconds=500),
    dt.timedelta.max, dt.timedelta.min, dt.timedelta(weeks=-52),
]


@pytest.mark.parametrize("value", INTERVALS, ids=str)
async def test_interval_round_trip(db, server_version: int, value: dt.timedelta) -> None:
    got, seconds = await db.fetchrow(
        "SELECT $1::interval, extract(epoch FROM $1::interval)::text", value)
    assert_same(got, value)
    if server_version >= 140000:    # extract() returns numeric from 14, float8 before
        assert Decimal(seconds) == exact_seconds(value)


async def test_interval_is_sent_as_days_and_time(db) -> None:
    parts = await db.fetchrow(
        "SELECT $1::interval::text, extract(day FROM $1::interval), extract(month FROM $1::interval)",
        dt.timedelta(days=45, hours=-1))
    assert tuple(parts) == ("44 days 23:00:00", Decimal(44), Decimal(0))


@pytest.mark.parametrize("literal, days", [
    ("2147483647 days", 2147483647), ("178000000 years", 64970000000),
    ("1000000000 days", 1000000000),
])
async def test_interval_out_of_timedelta_range_raises_overflow_error(db, literal: str, days: int) -> None:
    with pytest.raises(OverflowError) as info:
        await db.fetchval(f"SELECT '{literal}'::interval")
    assert str(info.value) == (
        f"interval of {days} days is out of the range of datetime.timedelta "
        f"(at most 999999999 days)")
    assert await db.fetchval("SELECT '1 day'::interval") == dt.timedelta(days=1)


# --- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("type_name, value, reason", [
    ("date", "2020-01-01", "expected a datetime.date instance, got str"),
    ("date", 20200101, "expected a datetime.date instance, got int"),
    ("timestamp", "2020-01-01", "expected a datetime.datetime or datetime.date instance, got str"),
    ("timestamp", 1.5, "expected a datetime.datetime or datetime.date instance, got float"),
    ("timestamptz", dt.time(1), "expected a datetime.datetime or datetime.date instance, got time"),
    ("time", dt.date(2020, 1, 1), "expected a datetime.time instance, got date"),
    ("time", 3600, "expected a datetime.time instance, got int"),
    ("interval", 5, "expected a datetime.timedelta instance, got int"),
    ("interval", "1 day", "expected a datetime.timedelta instance, got str"),
])
async def test_bad_argument_raises_data_error(db, type_name: str, value: Any, reason: str) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval(f"SELECT $1::{type_name}", value)
    message = str(info.value)
    assert message.startswith("invalid input for query argument $1: ")
    assert f"invalid input for type {type_name}: {reason}" in message
    assert await db.fetchval("SELECT $1::date", dt.date(2020, 1, 1)) == dt.date(2020, 1, 1)


async def test_table_round_trip_with_nulls(db) -> None:
    await db.execute(
        "CREATE TEMP TABLE moments (d date, t time, tz timetz, ts timestamp, tstz timestamptz, i interval)")
    row = (dt.date(2021, 3, 4), dt.time(5, 6, 7, 8), dt.time(9, 10, tzinfo=tz(-2)),
           dt.datetime(2021, 3, 4, 5, 6, 7, 8), dt.datetime(2021, 3, 4, 5, 6, 7, 8, tzinfo=UTC),
           dt.timedelta(days=3, seconds=4))
    await db.execute("INSERT INTO moments VALUES ($1, $2, $3, $4, $5, $6)", *row)
    await db.execute("INSERT INTO moments VALUES ($1, $2, $3, $4, $5, $6)", *([None] * 6))
    rows = await db.fetch("SELECT * FROM moments")
    assert tuple(rows[0]) == row
    assert tuple(rows[1]) == (None,) * 6


# --- property tests ------------------------------------------------------------------

fixed_offsets = st.builds(
    dt.timezone, st.timedeltas(min_value=dt.timedelta(hours=-15, minutes=-59, seconds=-59),
                               max_value=dt.timedelta(hours=15, minutes=59, seconds=59))
    .map(lambda d: dt.timedelta(seconds=int(d.total_seconds()))))


@PROPERTY_SETTINGS
@given(value=st.dates())
async def test_property_date(db, value: dt.date) -> None:
    got, text = await db.fetchrow("SELECT $1::date, $1::date::text", value)
    assert_same(got, value)
    if value not in (dt.date.min, dt.date.max):
        assert text == pg_date(value)


@PROPERTY_SETTINGS
@given(value=st.datetimes())
async def test_property_timestamp(db, value: dt.datetime) -> None:
    got, text = await db.fetchrow("SELECT $1::timestamp, $1::timestamp::text", value)
    assert_same(got, value)
    if value not in (dt.datetime.min, dt.datetime.max):
        assert text == pg_timestamp(value)


@PROPERTY_SETTINGS
@given(value=st.datetimes(timezones=st.one_of(st.just(UTC), fixed_offsets, st.timezones())))
async def test_property_timestamptz(db, value: dt.datetime) -> None:
    in_utc = value.replace(tzinfo=None) - value.utcoffset()
    assume(dt.datetime.min < in_utc < dt.datetime.max)
    got, text = await db.fetchrow("SELECT $1::timestamptz, $1::timestamptz::text", value)
    assert_same(got, in_utc.replace(tzinfo=UTC))
    assert text == pg_timestamp(in_utc) + "+00"


@PROPERTY_SETTINGS
@given(value=st.times())
async def test_property_time(db, value: dt.time) -> None:
    got, text = await db.fetchrow("SELECT $1::time, $1::time::text", value)
    assert_same(got, value)
    assert text == pg_time(value)


@PROPERTY_SETTINGS
@given(value=st.times(), zone=fixed_offsets)
async def test_property_timetz(db, value: dt.time, zone: dt.timezone) -> None:
    value = value.replace(tzinfo=zone)
    got, text = await db.fetchrow("SELECT $1::timetz, $1::timetz::text", value)
    assert_same(got, value)
    assert text == pg_time(value) + pg_offset(value.utcoffset())


@PROPERTY_SETTINGS
@given(value=st.timedeltas())
async def test_property_interval(db, server_version: int, value: dt.timedelta) -> None:
    got, seconds = await db.fetchrow(
        "SELECT $1::interval, extract(epoch FROM $1::interval)::text", value)
    assert_same(got, value)
    if server_version >= 140000:    # extract() returns numeric from 14, float8 before
        assert Decimal(seconds) == exact_seconds(value)


@PROPERTY_SETTINGS
@given(months=st.integers(-(2 ** 31) + 1, 2 ** 31 - 1), days=st.integers(-10 ** 6, 10 ** 6),
       usecs=st.integers(-10 ** 15, 10 ** 15))
async def test_property_interval_months_mapping(db, months: int, days: int, usecs: int) -> None:
    sign = -1 if months < 0 else 1
    years, rest = divmod(abs(months), 12)
    total_days = days + sign * (years * 365 + rest * 30)
    query = ("SELECT make_interval(months => $1::int4, days => $2::int4)"
             " + $3::int8 * interval '1 microsecond'")
    try:
        expected = dt.timedelta(days=total_days, microseconds=usecs)
    except OverflowError:
        with pytest.raises(OverflowError, match="out of the range of datetime.timedelta"):
            await db.fetchval(query, months, days, usecs)
    else:
        assert_same(await db.fetchval(query, months, days, usecs), expected)


# --- compared with asyncpg ------------------------------------------------------------

ASYNCPG_LITERALS = [
    "'2020-02-29'::date", "'infinity'::date", "'-infinity'::date", "'0001-01-01'::date",
    "'9999-12-31'::date", "'2020-02-29 12:34:56.789012'::timestamp", "'0001-01-01'::timestamp",
    "'infinity'::timestamp", "'-infinity'::timestamp", "'2020-02-29 12:34:56.789012+05:30'::timestamptz",
    "'infinity'::timestamptz", "'-infinity'::timestamptz", "'9999-12-31 23:59:59.999999+00'::timestamptz",
    "'23:59:59.999999'::time", "'00:00'::time", "'12:00+05:30'::timetz", "'12:00-15:59'::timetz",
    "'-13 months -1 day'::interval", "'1 year 1 month'::interval", "'-1 day +00:00:05'::interval",
    "'-00:00:00.000001'::interval", "'5 years 3 mons 2 days 04:05:06.7'::interval",
]

ASYNCPG_ARGUMENTS = [
    ("date", dt.date(2020, 2, 29)), ("date", dt.date.max), ("date", dt.date.min),
    ("date", dt.datetime(2020, 1, 1, 5)), ("timestamp", dt.datetime(2020, 1, 1, 1, 2, 3, 4)),
    ("timestamp", dt.date(2020, 1, 1)), ("timestamp", dt.datetime.max), ("timestamp", dt.datetime.min),
    ("timestamptz", dt.datetime(2020, 6, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))),
    ("timestamptz", dt.datetime.max.replace(tzinfo=UTC)), ("timestamptz", dt.datetime.max),
    ("timestamptz", dt.datetime.min.replace(tzinfo=tz(-1))), ("time", dt.time(1, 2, 3, 4, tzinfo=UTC)),
    ("time", dt.datetime(2020, 1, 1, 1, 2, 3)), ("timetz", dt.time(1, 2, tzinfo=tz(-3, -30))),
    ("interval", dt.timedelta(days=-1, seconds=5)), ("interval", dt.timedelta.max),
    ("interval", dt.timedelta.min),
]


async def test_same_values_as_asyncpg(db, connect_kwargs) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    other = await asyncpg.connect(**connect_kwargs)
    try:
        for literal in ASYNCPG_LITERALS:
            assert_same(await db.fetchval(f"SELECT {literal}"), await other.fetchval(f"SELECT {literal}"))
        for type_name, value in ASYNCPG_ARGUMENTS:
            query = f"SELECT $1::{type_name}"
            assert_same(await db.fetchval(query, value), await other.fetchval(query, value))
        # Naive datetimes as timestamptz: asyncpg uses the client's local zone,
        # which equals our UTC rule only on a client running in UTC.
        if dt.datetime(2020, 1, 1).astimezone().utcoffset() == dt.timedelta(0):
            value = dt.datetime(2020, 1, 1, 12)
            assert_same(await db.fetchval("SELECT $1::timestamptz", value),
                        await other.fetchval("SELECT $1::timestamptz", value))
    finally:
        await other.close()
