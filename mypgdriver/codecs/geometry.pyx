# cython: language_level=3
"""point, line, lseg, box, path, polygon, circle <-> mypgdriver.types.

Binary forms (the *_send/*_recv functions in PostgreSQL's
utils/adt/geo_ops.c) are float8 coordinates in order:
point x y; line A B C; lseg x1 y1 x2 y2; box high.x high.y low.x low.y;
circle x y radius; path = closed byte + int32 count + points;
polygon = int32 count + points.

Arguments may be the mypgdriver.types values or plain sequences, as with
asyncpg: (x, y) for a point, a tuple of points for a closed path and a list
for an open one.
"""

from cpython.float cimport PyFloat_AsDouble
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_byte, frame_read_int32, unpack_double)
from mypgdriver.codecs.base cimport (
    Codec, register_builtin, raise_encode_error, raise_decode_error, check_length)

from mypgdriver.types import Point, Box, Line, LineSegment, Path, Polygon, Circle


# --- decoding ----------------------------------------------------------------

cdef inline double read_double(Frame *frame) except? -1.0:
    return unpack_double(frame_read(frame, 8))


cdef inline object read_point(Frame *frame):
    cdef double x = read_double(frame)
    cdef double y = read_double(frame)
    # tuple.__new__ skips Point.__new__'s float() conversions.
    return tuple.__new__(Point, (x, y))


cdef tuple read_points(Codec codec, Frame *frame):
    cdef int32_t n = frame_read_int32(frame)
    cdef int32_t i
    cdef object point
    if n < 0 or <Py_ssize_t>n * 16 != frame.remaining:
        raise_decode_error(codec, f'{n} points do not fill {frame.remaining} bytes')
    cdef tuple points = PyTuple_New(n)
    for i in range(n):
        point = read_point(frame)
        Py_INCREF(point)
        PyTuple_SET_ITEM(points, i, point)
    return points


cdef object point_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 16)
    return read_point(frame)


cdef object line_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 24)
    cdef double a = read_double(frame)
    cdef double b = read_double(frame)
    cdef double c = read_double(frame)
    return tuple.__new__(Line, (a, b, c))


cdef object lseg_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 32)
    cdef object p1 = read_point(frame)
    return tuple.__new__(LineSegment, (p1, read_point(frame)))


cdef object box_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 32)
    cdef object high = read_point(frame)
    return tuple.__new__(Box, (high, read_point(frame)))


cdef object circle_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 24)
    cdef object center = read_point(frame)
    return tuple.__new__(Circle, (center, read_double(frame)))


cdef object path_decode(Codec codec, Frame *frame):
    cdef bint closed = frame_read_byte(frame) != 0
    cdef object path = Path.__new__(Path)
    path._points = read_points(codec, frame)
    path._is_closed = closed
    return path


cdef object polygon_decode(Codec codec, Frame *frame):
    cdef object polygon = Polygon.__new__(Polygon)
    polygon._points = read_points(codec, frame)
    polygon._is_closed = True
    return polygon


# --- encoding ----------------------------------------------------------------

cdef inline int write_coordinate(Codec codec, WriteBuffer buf, object outer, object c) except -1:
    cdef double v = 0.0
    if isinstance(c, (str, bytes)):
        raise_encode_error(codec, outer, f'a coordinate must be a number, got {type(c).__name__}')
    try:
        v = PyFloat_AsDouble(c)
    except TypeError:
        raise_encode_error(codec, outer, f'a coordinate must be a number, got {type(c).__name__}')
    return buf.write_double(v)


cdef object as_sequence(Codec codec, object outer, object value, Py_ssize_t n, str what):
    # Exactly n items: a 3-tuple where a point goes is a mistake, not a point.
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__') \
            or not hasattr(value, '__getitem__') or len(value) != n:
        raise_encode_error(codec, outer, f'expected {what}, got {value!r}')
    return value


cdef int write_point(Codec codec, WriteBuffer buf, object outer, object point) except -1:
    as_sequence(codec, outer, point, 2, 'a point (x, y)')
    write_coordinate(codec, buf, outer, point[0])
    return write_coordinate(codec, buf, outer, point[1])


cdef int write_points(Codec codec, WriteBuffer buf, object value, object points) except -1:
    cdef Py_ssize_t n = len(points)
    if n == 0:
        # The server refuses paths and polygons without points.
        raise_encode_error(codec, value, f'a {codec.name} needs at least one point')
    if n > (0x7FFFFFFF - 5) // 16:
        raise_encode_error(codec, value, f'too many points')
    buf.write_int32(<int32_t>n)
    for point in points:
        write_point(codec, buf, value, point)
    return 0


cdef int point_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_point(codec, buf, value, value)


cdef int line_encode(Codec codec, WriteBuffer buf, object value) except -1:
    as_sequence(codec, value, value, 3, 'a line (A, B, C)')
    for i in range(3):
        write_coordinate(codec, buf, value, value[i])
    return 0


cdef int two_points_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # lseg (p1, p2) and box (high, low); the server normalises box corners.
    as_sequence(codec, value, value, 2, f'a {codec.name} of two points')
    write_point(codec, buf, value, value[0])
    return write_point(codec, buf, value, value[1])


cdef int circle_encode(Codec codec, WriteBuffer buf, object value) except -1:
    as_sequence(codec, value, value, 2, 'a circle (center, radius)')
    write_point(codec, buf, value, value[0])
    return write_coordinate(codec, buf, value, value[1])


cdef int path_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef bint closed = False
    if isinstance(value, Path):
        closed = value.is_closed
        points = value.points
    elif isinstance(value, tuple):
        closed = True
        points = value
    elif isinstance(value, list):
        closed = False
        points = value
    else:
        raise_encode_error(
            codec, value,
            f'expected Path, tuple (closed) or list (open) of points, got {type(value).__name__}')
    buf.write_byte(1 if closed else 0)
    return write_points(codec, buf, value, points)


cdef int polygon_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if isinstance(value, Path):
        points = value.points
    elif isinstance(value, (tuple, list)):
        points = value
    else:
        raise_encode_error(
            codec, value, f'expected Polygon or a sequence of points, got {type(value).__name__}')
    return write_points(codec, buf, value, points)


register_builtin(600, 'point', point_decode, point_encode)
register_builtin(628, 'line', line_decode, line_encode)
register_builtin(601, 'lseg', lseg_decode, two_points_encode)
register_builtin(603, 'box', box_decode, two_points_encode)
register_builtin(602, 'path', path_decode, path_encode)
register_builtin(604, 'polygon', polygon_decode, polygon_encode)
register_builtin(718, 'circle', circle_decode, circle_encode)
