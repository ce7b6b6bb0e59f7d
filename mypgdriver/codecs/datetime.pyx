# cython: language_level=3, cdivision=True
"""date, time, timetz, timestamp, timestamptz and interval <-> datetime types.

Binary formats (PostgreSQL's date.c / timestamp.c send and recv functions,
integer datetimes):

- date: int32 days since 2000-01-01; INT32_MAX / INT32_MIN are +/-infinity.
- timestamp, timestamptz: int64 microseconds since 2000-01-01 00:00:00
  (UTC for timestamptz); INT64_MAX / INT64_MIN are +/-infinity.
- time: int64 microseconds since midnight (24:00:00 is allowed).
- timetz: time, then int32 zone offset in seconds *west* of UTC.
- interval: int64 microseconds, int32 days, int32 months.

The Python mapping follows asyncpg:

- infinity / -infinity: date.max / date.min and (naive, also for
  timestamptz) datetime.max / datetime.min, which encode back to infinity.
- timestamptz decodes to an aware datetime in UTC.  A naive datetime (or a
  date) sent as timestamptz is taken as UTC (asyncpg takes it as the
  client's local time, which is the same only when the client runs in UTC).
- An aware datetime sent as timestamp is refused: dropping its offset would
  silently change the instant.
- A naive time sent as timetz is refused, and so is a tzinfo whose offset
  depends on the date (zoneinfo zones); time ignores tzinfo.
- interval -> timedelta counts 12 months as 365 days and the remaining months
  as 30 days each; timedelta -> interval sends days and microseconds, never
  months.
- Values Python cannot hold (years before 1 or after 9999, time 24:00:00)
  raise the error asyncpg raises: OverflowError for timestamps and
  intervals, ValueError for dates and times.  Unlike asyncpg, timetz keeps
  zone offsets that are not whole minutes.
"""

from cpython.datetime cimport (
    import_datetime, date_new, datetime_new, time_new, timedelta_new,
    PyDate_Check, PyDateTime_Check, PyTime_Check, PyDelta_Check,
    PyDateTime_GET_YEAR, PyDateTime_GET_MONTH, PyDateTime_GET_DAY,
    PyDateTime_DATE_GET_HOUR, PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND, PyDateTime_DATE_GET_MICROSECOND,
    PyDateTime_TIME_GET_HOUR, PyDateTime_TIME_GET_MINUTE,
    PyDateTime_TIME_GET_SECOND, PyDateTime_TIME_GET_MICROSECOND,
    PyDateTime_DELTA_GET_DAYS, PyDateTime_DELTA_GET_SECONDS,
    PyDateTime_DELTA_GET_MICROSECONDS, datetime_tzinfo, time_tzinfo)
from libc.stdint cimport int32_t, int64_t, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, unpack_int32, unpack_int64
from mypgdriver.codecs.base cimport Codec, register_builtin, raise_encode_error, check_length

import datetime as _datetime

import_datetime()


cdef enum:
    USECS_PER_SEC = 1000000
    SECS_PER_DAY = 86400
    # Days from 1970-01-01 (the civil-calendar helpers' origin) to
    # PostgreSQL's epoch 2000-01-01.
    PG_EPOCH_DAYS = 10957
    # PostgreSQL days of date.min (0001-01-01) and date.max (9999-12-31).
    PY_MIN_DAYS = -730119
    PY_MAX_DAYS = 2921939
    # PostgreSQL's limit on zone offsets (TZDISP_LIMIT, 15:59:59).
    MAX_ZONE_SECONDS = 57599
    # Python timedelta's limit on days.
    MAX_DELTA_DAYS = 999999999

cdef int64_t USECS_PER_DAY = <int64_t>SECS_PER_DAY * USECS_PER_SEC
# Microseconds since the PostgreSQL epoch of datetime.max / datetime.min:
# those two values stand for +/-infinity.
cdef int64_t PY_MAX_USECS = (<int64_t>PY_MAX_DAYS + 1) * USECS_PER_DAY - 1
cdef int64_t PY_MIN_USECS = <int64_t>PY_MIN_DAYS * USECS_PER_DAY

cdef object UTC = _datetime.timezone.utc
cdef object DATE_MAX = _datetime.date.max
cdef object DATE_MIN = _datetime.date.min
cdef object DATETIME_MAX = _datetime.datetime.max
cdef object DATETIME_MIN = _datetime.datetime.min
cdef object timezone = _datetime.timezone
cdef object timedelta = _datetime.timedelta

# timetz columns usually repeat a handful of offsets: reuse the tzinfo
# objects instead of building one per value.
cdef dict ZONE_CACHE = {}


# --- proleptic Gregorian calendar arithmetic ---------------------------------
# Both directions work on 400-year cycles (146097 days) counted from
# 0000-03-01, so that the leap day falls at the end of a cycle's year.  Valid
# for any year, including PostgreSQL's BC dates (year 0 is 1 BC).

cdef inline int64_t floor_div(int64_t a, int64_t b) noexcept:
    """a // b rounded down, for b > 0 (C division truncates toward zero)."""
    cdef int64_t q = a // b
    if a % b < 0:
        q -= 1
    return q


cdef int64_t days_from_civil(int64_t year, int month, int day) noexcept:
    """Days from 1970-01-01 to the given date."""
    cdef int64_t cycle, year_of_cycle, day_of_year, day_of_cycle
    if month <= 2:
        year -= 1
    cycle = floor_div(year, 400)
    year_of_cycle = year - cycle * 400
    # Months counted from March: their lengths repeat in a 153-day
    # five-month pattern, hence (153 * m + 2) // 5.
    day_of_year = (153 * (month + (9 if month <= 2 else -3)) + 2) // 5 + day - 1
    day_of_cycle = year_of_cycle * 365 + year_of_cycle // 4 - year_of_cycle // 100 + day_of_year
    return cycle * 146097 + day_of_cycle - 719468


cdef void civil_from_days(int64_t days, int64_t *year, int *month, int *day) noexcept:
    """The inverse of days_from_civil."""
    cdef int64_t z = days + 719468
    cdef int64_t cycle = floor_div(z, 146097)
    cdef int64_t day_of_cycle = z - cycle * 146097
    cdef int64_t year_of_cycle = (day_of_cycle - day_of_cycle // 1460
                                  + day_of_cycle // 36524 - day_of_cycle // 146096) // 365
    cdef int64_t day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle // 4
                                               - year_of_cycle // 100)
    cdef int64_t month_from_march = (5 * day_of_year + 2) // 153
    day[0] = <int>(day_of_year - (153 * month_from_march + 2) // 5 + 1)
    month[0] = <int>(month_from_march + 3 if month_from_march < 10 else month_from_march - 9)
    year[0] = year_of_cycle + cycle * 400 + (1 if month[0] <= 2 else 0)


cdef str format_pg_date(int64_t pg_days):
    """A PostgreSQL date as the server shows it (ISO, BC suffix), for errors."""
    cdef int64_t year
    cdef int month, day
    civil_from_days(pg_days + PG_EPOCH_DAYS, &year, &month, &day)
    if year <= 0:
        return f'{1 - year:04d}-{month:02d}-{day:02d} BC'
    return f'{year:04d}-{month:02d}-{day:02d}'


cdef str format_pg_timestamp(int64_t usecs):
    cdef int64_t days = floor_div(usecs, USECS_PER_DAY)
    cdef int64_t tod = (usecs - days * USECS_PER_DAY) // USECS_PER_SEC
    cdef str d = format_pg_date(days)
    cdef str t = f'{tod // 3600:02d}:{tod // 60 % 60:02d}:{tod % 60:02d}'
    if d.endswith(' BC'):
        # The era goes after the time, as the server prints it.  (Not d[:-3]:
        # negative indices are undefined under the build's wraparound=False.)
        return f"{d.removesuffix(' BC')} {t} BC"
    return f'{d} {t}'


cdef inline int64_t date_days(object value) noexcept:
    """PostgreSQL days of a date (or of a datetime's date part)."""
    return days_from_civil(PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value),
                           PyDateTime_GET_DAY(value)) - PG_EPOCH_DAYS


cdef inline int64_t datetime_usecs(object value) noexcept:
    """Microseconds since the PostgreSQL epoch of a datetime's wall time."""
    return (date_days(value) * USECS_PER_DAY
            + ((PyDateTime_DATE_GET_HOUR(value) * 60 + PyDateTime_DATE_GET_MINUTE(value)) * 60
               + PyDateTime_DATE_GET_SECOND(value)) * <int64_t>USECS_PER_SEC
            + PyDateTime_DATE_GET_MICROSECOND(value))


cdef object make_datetime(Codec codec, int64_t usecs, object tz):
    cdef int64_t days = floor_div(usecs, USECS_PER_DAY)
    cdef int64_t tod = usecs - days * USECS_PER_DAY
    cdef int64_t year
    cdef int month, day
    cdef int64_t secs = tod // USECS_PER_SEC
    if days < PY_MIN_DAYS or days > PY_MAX_DAYS:
        raise OverflowError(
            f'{codec.name} value {format_pg_timestamp(usecs)} is out of the range '
            f'of datetime.datetime (years 1 to 9999)')
    civil_from_days(days + PG_EPOCH_DAYS, &year, &month, &day)
    return datetime_new(<int>year, month, day, <int>(secs // 3600), <int>(secs // 60 % 60),
                        <int>(secs % 60), <int>(tod % USECS_PER_SEC), tz)


cdef inline int write_timestamp(WriteBuffer buf, int64_t usecs) except -1:
    if usecs == PY_MAX_USECS:
        return buf.write_int64(INT64_MAX)
    if usecs == PY_MIN_USECS:
        return buf.write_int64(INT64_MIN)
    return buf.write_int64(usecs)


cdef int get_utc_offset(object value, int64_t *usecs) except -1:
    """Store value.utcoffset() in microseconds; return 0 if it is None (naive).

    Works for datetime and time values; the call is skipped for UTC.
    """
    cdef object tz = datetime_tzinfo(value) if PyDateTime_Check(value) else time_tzinfo(value)
    cdef object offset
    usecs[0] = 0
    if tz is None:
        return 0
    if tz is UTC:
        return 1
    offset = value.utcoffset()
    if offset is None:
        return 0
    usecs[0] = ((<int64_t>PyDateTime_DELTA_GET_DAYS(offset) * SECS_PER_DAY
                 + PyDateTime_DELTA_GET_SECONDS(offset)) * USECS_PER_SEC
                + PyDateTime_DELTA_GET_MICROSECONDS(offset))
    return 1


cdef str type_name(object value):
    return type(value).__name__


# --- date -----------------------------------------------------------------------

cdef object date_decode(Codec codec, Frame *frame):
    cdef int64_t days
    cdef int64_t year
    cdef int month, day
    check_length(codec, frame, 4)
    days = unpack_int32(frame_read(frame, 4))
    if days == INT32_MAX:
        return DATE_MAX
    if days == INT32_MIN:
        return DATE_MIN
    if days < PY_MIN_DAYS or days > PY_MAX_DAYS:
        raise ValueError(
            f'date value {format_pg_date(days)} is out of the range of datetime.date '
            f'(years 1 to 9999)')
    civil_from_days(days + PG_EPOCH_DAYS, &year, &month, &day)
    return date_new(<int>year, month, day)


cdef int date_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int64_t days
    if not PyDate_Check(value):
        raise_encode_error(
            codec, value, f'expected a datetime.date instance, got {type_name(value)}')
    # A datetime is a date too: its date part is sent (as asyncpg does).
    days = date_days(value)
    if days == PY_MAX_DAYS:
        return buf.write_int32(INT32_MAX)
    if days == PY_MIN_DAYS:
        return buf.write_int32(INT32_MIN)
    return buf.write_int32(<int32_t>days)


# --- timestamp and timestamptz --------------------------------------------------

cdef object timestamp_decode(Codec codec, Frame *frame):
    cdef int64_t usecs
    check_length(codec, frame, 8)
    usecs = unpack_int64(frame_read(frame, 8))
    if usecs == INT64_MAX:
        return DATETIME_MAX
    if usecs == INT64_MIN:
        return DATETIME_MIN
    return make_datetime(codec, usecs, None)


cdef int timestamp_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int64_t offset
    if PyDateTime_Check(value):
        if get_utc_offset(value, &offset):
            raise_encode_error(
                codec, value,
                'an aware datetime cannot be sent as timestamp without time zone: '
                'use timestamptz, or convert it to a naive datetime first')
        return write_timestamp(buf, datetime_usecs(value))
    if PyDate_Check(value):
        return write_timestamp(buf, date_days(value) * USECS_PER_DAY)
    raise_encode_error(
        codec, value,
        f'expected a datetime.datetime or datetime.date instance, got {type_name(value)}')


cdef object timestamptz_decode(Codec codec, Frame *frame):
    cdef int64_t usecs
    check_length(codec, frame, 8)
    usecs = unpack_int64(frame_read(frame, 8))
    # Infinity decodes to the naive extremes, as with asyncpg.
    if usecs == INT64_MAX:
        return DATETIME_MAX
    if usecs == INT64_MIN:
        return DATETIME_MIN
    return make_datetime(codec, usecs, UTC)


cdef int timestamptz_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int64_t offset
    if PyDateTime_Check(value):
        # Subtracting the offset here rather than calling astimezone() also
        # works for datetime.min with a positive offset (1 BC in UTC).
        get_utc_offset(value, &offset)
        return write_timestamp(buf, datetime_usecs(value) - offset)
    if PyDate_Check(value):
        return write_timestamp(buf, date_days(value) * USECS_PER_DAY)
    raise_encode_error(
        codec, value,
        f'expected a datetime.datetime or datetime.date instance, got {type_name(value)}')


# --- time and timetz ------------------------------------------------------------

cdef object make_time(Codec codec, int64_t usecs, object tz):
    cdef int64_t secs
    if usecs < 0 or usecs >= USECS_PER_DAY:
        if usecs == USECS_PER_DAY:
            raise ValueError(
                f'{codec.name} value 24:00:00 cannot be represented as datetime.time')
        raise ValueError(f'{codec.name} value of {usecs} microseconds is out of range')
    secs = usecs // USECS_PER_SEC
    return time_new(<int>(secs // 3600), <int>(secs // 60 % 60), <int>(secs % 60),
                    <int>(usecs % USECS_PER_SEC), tz)


cdef int64_t time_usecs(object value) noexcept:
    if PyDateTime_Check(value):
        return (((PyDateTime_DATE_GET_HOUR(value) * 60 + PyDateTime_DATE_GET_MINUTE(value)) * 60
                 + PyDateTime_DATE_GET_SECOND(value)) * <int64_t>USECS_PER_SEC
                + PyDateTime_DATE_GET_MICROSECOND(value))
    return (((PyDateTime_TIME_GET_HOUR(value) * 60 + PyDateTime_TIME_GET_MINUTE(value)) * 60
             + PyDateTime_TIME_GET_SECOND(value)) * <int64_t>USECS_PER_SEC
            + PyDateTime_TIME_GET_MICROSECOND(value))


cdef object time_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 8)
    return make_time(codec, unpack_int64(frame_read(frame, 8)), None)


cdef int time_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # tzinfo is ignored, and a datetime gives its time of day (as asyncpg).
    if not PyTime_Check(value) and not PyDateTime_Check(value):
        raise_encode_error(
            codec, value, f'expected a datetime.time instance, got {type_name(value)}')
    return buf.write_int64(time_usecs(value))


cdef object zone_tzinfo(int32_t zone):
    cdef object tz = ZONE_CACHE.get(zone)
    if tz is None:
        # PostgreSQL counts seconds west of UTC, Python east of it.
        tz = timezone(timedelta(seconds=-zone))
        if len(ZONE_CACHE) < 1024:
            ZONE_CACHE[zone] = tz
    return tz


cdef object timetz_decode(Codec codec, Frame *frame):
    cdef const char *p
    cdef int32_t zone
    check_length(codec, frame, 12)
    p = frame_read(frame, 12)
    zone = unpack_int32(p + 8)
    if zone < -MAX_ZONE_SECONDS or zone > MAX_ZONE_SECONDS:
        raise ValueError(f'timetz zone offset of {zone} seconds is out of range')
    return make_time(codec, unpack_int64(p), zone_tzinfo(zone))


cdef int timetz_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int64_t offset_us
    if not PyTime_Check(value) and not PyDateTime_Check(value):
        raise_encode_error(
            codec, value, f'expected a datetime.time instance, got {type_name(value)}')
    if not get_utc_offset(value, &offset_us):
        if value.tzinfo is None:
            raise_encode_error(
                codec, value,
                'a naive time is ambiguous for time with time zone: attach a tzinfo '
                '(e.g. datetime.timezone.utc) or use type time')
        raise_encode_error(
            codec, value,
            f'tzinfo {value.tzinfo!r} has no fixed UTC offset without a date: '
            f'use a datetime.timezone')
    if offset_us % USECS_PER_SEC != 0:
        raise_encode_error(codec, value, 'a UTC offset with microseconds cannot be stored')
    if offset_us > <int64_t>MAX_ZONE_SECONDS * USECS_PER_SEC or \
            offset_us < -<int64_t>MAX_ZONE_SECONDS * USECS_PER_SEC:
        raise_encode_error(codec, value, 'UTC offset out of range (at most 15:59:59)')
    buf.write_int64(time_usecs(value))
    return buf.write_int32(<int32_t>(-(offset_us // USECS_PER_SEC)))


# --- interval -------------------------------------------------------------------

cdef object interval_decode(Codec codec, Frame *frame):
    cdef const char *p
    cdef int64_t usecs, days, months, years, day_part
    check_length(codec, frame, 16)
    p = frame_read(frame, 16)
    usecs = unpack_int64(p)
    days = unpack_int32(p + 8)
    months = unpack_int32(p + 12)
    # asyncpg's conversion: whole years are 365 days, the other months 30
    # days each, both signed like the month count (-13 months: -395 days).
    if months < 0:
        years = -(-months // 12)
        months = -(-months % 12)
    else:
        years = months // 12
        months = months % 12
    day_part = floor_div(usecs, USECS_PER_DAY)
    usecs -= day_part * USECS_PER_DAY
    days += years * 365 + months * 30 + day_part
    if days > MAX_DELTA_DAYS or days < -MAX_DELTA_DAYS:
        raise OverflowError(
            f'interval of {days} days is out of the range of datetime.timedelta '
            f'(at most {MAX_DELTA_DAYS} days)')
    return timedelta_new(<int>days, <int>(usecs // USECS_PER_SEC), <int>(usecs % USECS_PER_SEC))


cdef int interval_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if not PyDelta_Check(value):
        raise_encode_error(
            codec, value, f'expected a datetime.timedelta instance, got {type_name(value)}')
    buf.write_int64(<int64_t>PyDateTime_DELTA_GET_SECONDS(value) * USECS_PER_SEC
                    + PyDateTime_DELTA_GET_MICROSECONDS(value))
    buf.write_int32(PyDateTime_DELTA_GET_DAYS(value))
    return buf.write_int32(0)


register_builtin(1082, 'date', date_decode, date_encode)
register_builtin(1114, 'timestamp', timestamp_decode, timestamp_encode)
register_builtin(1184, 'timestamptz', timestamptz_decode, timestamptz_encode)
register_builtin(1083, 'time', time_decode, time_encode)
register_builtin(1266, 'timetz', timetz_decode, timetz_encode)
register_builtin(1186, 'interval', interval_decode, interval_encode)
