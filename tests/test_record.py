"""Record: the result row.  Expected values were checked against asyncpg 0.32."""
import collections
import copy
import gc
import operator
import pathlib
import pickle
import struct
import subprocess
import sys
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mypgdriver.protocol.record import (
    Record,
    RecordDescriptor,
    _restore_record,
)
from mypgdriver.protocol.record import (
    _make_record_for_tests as make,
)


class MyRecord(Record):
    def upper_name(self) -> str:
        return self["name"].upper()


class Index:
    """Any object with __index__ is a position, as for tuples."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


@pytest.fixture
def row() -> Record:
    return make(["id", "name", "score"], [7, "ann", None])


# --- positional access --------------------------------------------------------


def test_index_returns_value_at_position(row):
    assert row[0] == 7
    assert row[1] == "ann"
    assert row[2] is None


def test_negative_index_counts_from_the_end(row):
    assert row[-1] is None
    assert row[-2] == "ann"
    assert row[-3] == 7


@pytest.mark.parametrize("index", [3, 4, -4, -100, 2**62])
def test_index_out_of_range_raises_index_error(row, index):
    with pytest.raises(IndexError, match="^record index out of range$"):
        row[index]


@pytest.mark.parametrize("index", [2**70, -(2**70)])
def test_index_beyond_ssize_t_raises_index_error(row, index):
    with pytest.raises(IndexError, match="cannot fit 'int' into an index-sized integer"):
        row[index]


def test_bool_and_index_protocol_objects_are_positions(row):
    assert row[True] == "ann"
    assert row[False] == 7
    assert row[Index(1)] == "ann"
    assert row[Index(-1)] is None


@pytest.mark.parametrize(
    "key, expected",
    [
        (slice(1, 3), ("ann", None)),
        (slice(None), (7, "ann", None)),
        (slice(None, None, -1), (None, "ann", 7)),
        (slice(None, None, 2), (7, None)),
        (slice(-2, None), ("ann", None)),
        (slice(-100, 100), (7, "ann", None)),
        (slice(5, 9), ()),
    ],
)
def test_slice_returns_tuple_of_values(row, key, expected):
    result = row[key]
    assert type(result) is tuple
    assert result == expected


# --- access by column name ----------------------------------------------------


def test_name_returns_value_of_that_column(row):
    assert row["id"] == 7
    assert row["name"] == "ann"
    assert row["score"] is None


def test_missing_name_raises_key_error_naming_it(row):
    with pytest.raises(KeyError) as info:
        row["nope"]
    assert info.value.args == ("nope",)


@pytest.mark.parametrize("key", [1.0, b"id", None, ("id",), [1], {}])
def test_non_str_key_is_a_missing_column(row, key):
    # Unhashable keys too: KeyError, not TypeError, as in asyncpg.
    with pytest.raises(KeyError) as info:
        row[key]
    assert info.value.args == (key,)


def test_name_lookup_is_case_sensitive(row):
    with pytest.raises(KeyError):
        row["ID"]


def test_get_returns_value_or_default(row):
    assert row.get("name") == "ann"
    assert row.get("score", 5) is None  # a NULL column is not "missing"
    assert row.get("nope") is None
    assert row.get("nope", 5) == 5
    assert row.get("nope", default=6) == 6


def test_get_looks_up_names_only(row):
    assert row.get(0) is None
    assert row.get(0, "d") == "d"
    assert row.get([1], "d") == "d"


def test_get_argument_count_is_checked(row):
    with pytest.raises(TypeError, match="missing required argument 'key'"):
        row.get()
    with pytest.raises(TypeError, match="at most 2 arguments"):
        row.get("id", 1, 2)


def test_get_takes_its_arguments_by_keyword_too(row):
    assert row.get(key="name") == "ann"
    assert row.get(key="nope", default=7) == 7
    with pytest.raises(TypeError, match="multiple values for argument 'key'"):
        row.get("name", key="name")
    with pytest.raises(TypeError, match="multiple values for argument 'default'"):
        row.get("name", 1, default=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'fallback'"):
        row.get("name", fallback=2)


# --- mapping-style and sequence-style iteration --------------------------------


def test_keys_values_items_are_iterators_in_column_order(row):
    for it in (row.keys(), row.values(), row.items()):
        assert iter(it) is it
    assert list(row.keys()) == ["id", "name", "score"]
    assert list(row.values()) == [7, "ann", None]
    assert list(row.items()) == [("id", 7), ("name", "ann"), ("score", None)]


def test_iteration_yields_values(row):
    assert list(row) == [7, "ann", None]
    assert list(reversed(row)) == [None, "ann", 7]
    a, b, c = row
    assert (a, b, c) == (7, "ann", None)


def test_len(row):
    assert len(row) == 3
    assert len(make([], [])) == 0


def test_in_tests_column_names_not_values(row):
    assert "id" in row
    assert "score" in row
    assert "ann" not in row
    assert 7 not in row
    assert 0 not in row
    assert [1] not in row
    assert None not in row


def test_dict_of_record_maps_names_to_values(row):
    assert dict(row) == {"id": 7, "name": "ann", "score": None}


def test_truthiness_follows_length():
    assert not make([], [])
    assert make(["a"], [None])


# --- immutability ---------------------------------------------------------------


def test_item_assignment_and_deletion_raise_type_error(row):
    with pytest.raises(TypeError):
        row[0] = 1
    with pytest.raises(TypeError):
        row["id"] = 1
    with pytest.raises(TypeError):
        del row[0]
    assert row[0] == 7


def test_attributes_cannot_be_set_or_read_as_columns(row):
    with pytest.raises(AttributeError):
        row.id  # noqa: B018 - columns are not attributes, as in asyncpg
    with pytest.raises(AttributeError):
        row.extra = 1


def test_record_has_no_sequence_arithmetic(row):
    with pytest.raises(TypeError):
        row + (1,)
    with pytest.raises(TypeError):
        row * 2


# --- comparison and hashing ----------------------------------------------------------


def test_equal_to_tuple_of_values_both_ways(row):
    assert row == (7, "ann", None)
    assert (7, "ann", None) == row
    assert not (row != (7, "ann", None))
    assert row != (7, "ann")
    assert row != (7, "bob", None)


def test_equality_ignores_column_names(row):
    assert row == make(["a", "b", "c"], [7, "ann", None])
    assert row != make(["id", "name", "score"], [7, "ann", 0])


def test_not_equal_to_lists_or_scalars():
    assert make(["a", "b"], [1, 2]) != [1, 2]
    assert make(["a"], [1]) != 1
    assert not (make(["a"], [1]) == "a")


def test_ordering_is_tuple_ordering():
    r = make(["a", "b"], [1, 2])
    assert r < (2,)
    assert (2,) > r
    assert r <= (1, 2)
    assert r >= (1, 2)
    assert r < (1, 2, 0)
    assert r > (1,)
    assert r < make(["x"], [2])
    assert sorted([make(["a"], [3]), make(["a"], [1]), make(["a"], [2])]) == [(1,), (2,), (3,)]


@pytest.mark.parametrize("other", [1, [1, 2], "ab", None])
def test_ordering_against_non_tuples_raises_type_error(other):
    with pytest.raises(TypeError, match="not supported between instances"):
        make(["a", "b"], [1, 2]) < other  # noqa: B015 (the comparison is what raises)


def test_nan_value_equals_itself_by_identity_like_tuples():
    nan = float("nan")
    r = make(["a"], [nan])
    assert r == r
    assert r == (nan,)
    assert r != (float("nan"),)


def test_hash_equals_hash_of_value_tuple(row):
    assert hash(row) == hash((7, "ann", None))
    assert hash(make([], [])) == hash(())
    assert {row: 1}[(7, "ann", None)] == 1


def test_hash_of_row_with_unhashable_value_raises_type_error():
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        hash(make(["a"], [[1]]))


# --- repr ----------------------------------------------------------------------------


def test_repr_renders_values_with_repr(row):
    assert repr(row) == "<Record id=7 name='ann' score=None>"
    assert str(row) == repr(row)


def test_repr_of_empty_record():
    assert repr(make([], [])) == "<Record>"


def test_repr_of_quotes_bytes_lists_and_nested_records():
    inner = make(["z"], [b"\x00"])
    r = make(["a", "b", "c", "d", "e"], ["it's", 'say "hi"\n', [1, "x"], inner, (1, "x")])
    assert repr(r) == (
        "<Record a=\"it's\" b='say \"hi\"\\n' c=[1, 'x'] d=<Record z=b'\\x00'> e=(1, 'x')>"
    )


def test_repr_keeps_column_names_verbatim():
    assert repr(make(["weird name", "é"], [1, 2])) == "<Record weird name=1 é=2>"


def test_repr_of_row_containing_itself_does_not_recurse():
    values = []
    r = make(["a"], [values])
    values.append(r)
    assert repr(r) == "<Record a=[<Record ...>]>"


# --- duplicate column names (SELECT 1 AS a, 2 AS a) ------------------------------------


def test_duplicate_names_keep_every_column_and_look_up_the_last():
    r = make(["a", "a", "b"], [1, 2, 3])
    assert len(r) == 3
    assert list(r) == [1, 2, 3]
    assert r["a"] == 2
    assert r.get("a") == 2
    assert list(r.keys()) == ["a", "a", "b"]
    assert list(r.items()) == [("a", 1), ("a", 2), ("b", 3)]
    assert dict(r) == {"a": 2, "b": 3}
    assert dict(r) == dict(r.items())
    assert repr(r) == "<Record a=1 a=2 b=3>"


# --- construction ------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), (1,), ((1, 2),)])
def test_record_cannot_be_instantiated_directly(args):
    with pytest.raises(TypeError, match="^cannot create 'mypgdriver.protocol.record.Record' instances$"):
        Record(*args)


def test_subclass_cannot_be_instantiated_directly():
    with pytest.raises(TypeError, match="cannot create '.*MyRecord' instances"):
        MyRecord()


def test_bare_new_gives_a_safe_empty_record():
    # Not a supported way to build rows, but it must not yield a broken object.
    r = Record.__new__(Record)
    assert len(r) == 0
    assert repr(r) == "<Record>"
    assert list(r.keys()) == []
    with pytest.raises(IndexError):
        r[0]


def test_restore_record_checks_its_input():
    desc = RecordDescriptor(("a", "b"))
    assert _restore_record(Record, desc, (1, 2)) == (1, 2)
    with pytest.raises(ValueError, match="^record has 2 columns but 1 values$"):
        _restore_record(Record, desc, (1,))
    with pytest.raises(TypeError, match="is not a Record subclass"):
        _restore_record(tuple, desc, (1, 2))
    with pytest.raises(TypeError):
        _restore_record(Record, None, (1, 2))
    with pytest.raises(TypeError):
        _restore_record(Record, desc, [1, 2])


# --- subclasses (connect(record_class=...)) ------------------------------------------------


def test_subclass_keeps_its_class_and_methods():
    r = make(["id", "name"], [1, "ann"], cls=MyRecord)
    assert type(r) is MyRecord
    assert isinstance(r, Record)
    assert r.upper_name() == "ANN"
    assert r["id"] == 1
    assert r[1:] == ("ann",)
    assert r == (1, "ann")
    assert hash(r) == hash((1, "ann"))


def test_subclass_repr_uses_subclass_name():
    assert repr(make(["a"], [1], cls=MyRecord)) == "<MyRecord a=1>"
    assert repr(make([], [], cls=MyRecord)) == "<MyRecord>"


def test_nested_subclass_repr_uses_plain_name():
    class Outer:
        class Inner(Record):
            pass

    assert repr(make(["a"], [1], cls=Outer.Inner)) == "<Inner a=1>"


# --- RecordDescriptor --------------------------------------------------------------------


def test_descriptor_keeps_names():
    desc = RecordDescriptor(("a", "b"))
    assert desc.names == ("a", "b")
    assert repr(desc) == "RecordDescriptor(('a', 'b'))"


def test_descriptor_is_shared_by_rows():
    desc = RecordDescriptor(("a", "b"))
    r1 = _restore_record(Record, desc, (1, 2))
    r2 = _restore_record(Record, desc, (3, 4))
    assert (r1["b"], r2["b"]) == (2, 4)


def test_descriptor_rejects_non_str_names_and_non_tuples():
    with pytest.raises(TypeError, match="^column names must be str, got bytes at position 1$"):
        RecordDescriptor(("a", b"b"))
    with pytest.raises(TypeError):
        RecordDescriptor(["a"])
    with pytest.raises(TypeError):
        RecordDescriptor(None)


def test_descriptor_cannot_be_subclassed():
    with pytest.raises(TypeError):
        type("Sub", (RecordDescriptor,), {})


# --- pickling and copying (asyncpg refuses; we allow it) ---------------------------


def test_pickle_round_trip_keeps_names_values_and_class(row):
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = pickle.loads(pickle.dumps(row, protocol))
        assert type(loaded) is Record
        assert list(loaded.items()) == [("id", 7), ("name", "ann"), ("score", None)]


def test_pickled_rows_store_the_descriptor_once():
    desc = RecordDescriptor(("a_rather_unique_column_name",))
    rows = [_restore_record(Record, desc, (i,)) for i in range(50)]
    data = pickle.dumps(rows)
    assert data.count(b"a_rather_unique_column_name") == 1
    assert [r["a_rather_unique_column_name"] for r in pickle.loads(data)] == list(range(50))


def test_pickle_subclass_keeps_class_and_instance_attributes():
    r = make(["name"], ["ann"], cls=MyRecord)
    r.note = "kept"
    loaded = pickle.loads(pickle.dumps(r))
    assert type(loaded) is MyRecord
    assert loaded.upper_name() == "ANN"
    assert loaded.note == "kept"


def test_copy_and_deepcopy(row):
    inner = [1]
    r = make(["a"], [inner])
    assert copy.copy(r)[0] is inner
    deep = copy.deepcopy(r)
    assert deep == ([1],) and deep[0] is not inner
    assert copy.copy(row) == row


# --- garbage collection -------------------------------------------------------------


def test_rows_of_atomic_values_are_not_gc_tracked():
    r = make(["a", "b", "c", "d"], [1, "x", None, make(["z"], [1.5])])
    assert not gc.is_tracked(r)
    assert r == (1, "x", None, (1.5,))


def test_rows_that_could_join_a_cycle_stay_gc_tracked():
    assert gc.is_tracked(make(["a"], [[]]))
    assert gc.is_tracked(make(["a"], [make(["b"], [{}])]))
    assert gc.is_tracked(make(["a"], [1], cls=MyRecord))  # has a __dict__


def test_cycle_through_a_mutable_value_is_collected():
    class Marker:
        pass

    marker = Marker()
    alive = weakref.ref(marker)
    values = [marker]
    r = make(["a"], [values])
    values.append(r)
    del marker, values, r
    gc.collect()
    assert alive() is None


# --- a Record behaves like the tuple of its values -------------------------------------

_values = st.lists(
    st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats(allow_nan=False)),
    max_size=8,
)


@given(values=_values, data=st.data())
def test_record_indexes_like_tuple_of_values(values, data):
    expected = tuple(values)
    r = make([f"c{i}" for i in range(len(values))], values)
    assert len(r) == len(expected)
    assert list(r) == list(expected)
    assert hash(r) == hash(expected)
    assert r == expected
    for i in range(-len(expected) - 2, len(expected) + 2):
        try:
            want = expected[i]
        except IndexError:
            with pytest.raises(IndexError):
                r[i]
        else:
            assert r[i] == want
    key = data.draw(st.slices(len(expected) + 2))
    assert r[key] == expected[key]


@given(a=st.lists(st.integers(-3, 3), max_size=4), b=st.lists(st.integers(-3, 3), max_size=4))
def test_record_orders_like_tuple_of_values(a, b):
    ra = make([f"c{i}" for i in range(len(a))], a)
    rb = make([f"x{i}" for i in range(len(b))], b)
    ta, tb = tuple(a), tuple(b)
    for left, right in ((ra, rb), (ra, tb), (ta, rb)):
        assert (left == right) == (ta == tb)
        assert (left != right) == (ta != tb)
        assert (left < right) == (ta < tb)
        assert (left <= right) == (ta <= tb)
        assert (left > right) == (ta > tb)
        assert (left >= right) == (ta >= tb)


def test_recycled_rows_keep_their_own_class():
    # Exact Records are recycled through a freelist; subclass rows must never
    # come back out of it as plain Records or the other way round.
    for _ in range(3):
        rows = [make(["a"], [i], cls=MyRecord if i % 2 else Record) for i in range(600)]
        assert [type(r) for r in rows[:4]] == [Record, MyRecord, Record, MyRecord]
        assert all(type(r) is (MyRecord if r[0] % 2 else Record) for r in rows)
        del rows


# --- the C type: one allocation per row, recycled rows, deep nesting ----------------


def test_values_are_stored_in_the_row_itself():
    # One pointer per value in the row object, and no values tuple behind it.
    one = make(["a"], [1])
    three = make(["a", "b", "c"], [1, 2, 3])
    assert sys.getsizeof(three) - sys.getsizeof(one) == 2 * struct.calcsize("P")
    assert not any(type(o) is tuple for o in gc.get_referents(three))


def test_wide_row_beyond_recycled_sizes():
    names = [f"c{i}" for i in range(300)]
    r = make(names, range(300))
    assert len(r) == 300
    assert r[299] == 299 and r[-300] == 0
    assert r["c150"] == 150
    assert r[10:13] == (10, 11, 12)
    assert list(r.items())[-1] == ("c299", 299)
    assert hash(r) == hash(tuple(range(300)))


def test_recycled_rows_of_every_size_hold_only_their_own_values():
    for _ in range(3):
        rows = [make([f"c{i}" for i in range(n)], [(n, i) for i in range(n)])
                for n in range(40) for _ in range(50)]
        for r in rows:
            assert list(r) == [(len(r), i) for i in range(len(r))]
        del rows


def test_new_of_subclass_gives_a_safe_empty_subclass_row():
    r = MyRecord.__new__(MyRecord)
    assert type(r) is MyRecord
    assert len(r) == 0 and repr(r) == "<MyRecord>"


def test_iterators_report_their_remaining_length():
    r = make(["a", "b", "c"], [1, 2, 3])
    for it, first in ((iter(r), 1), (r.values(), 1), (r.items(), ("a", 1))):
        assert operator.length_hint(it) == 3
        assert next(it) == first
        assert operator.length_hint(it) == 2
        list(it)
        assert operator.length_hint(it) == 0
        with pytest.raises(StopIteration):
            next(it)


def test_compares_with_tuple_subclasses_like_a_tuple():
    point = collections.namedtuple("Point", "x y")
    r = make(["x", "y"], [1, 2])
    assert r == point(1, 2) and point(1, 2) == r
    assert r < point(1, 3) and point(0, 9) < r


def test_hash_of_nested_rows_equals_hash_of_nested_tuples():
    r = make(["a", "b"], [make(["x", "y"], [1, "s"]), (2.5, None)])
    assert hash(r) == hash(((1, "s"), (2.5, None)))


def test_row_holding_a_tracked_tuple_stays_tracked():
    assert gc.is_tracked(make(["a"], [([],)]))
    assert not gc.is_tracked(make(["a"], [(1, "x")]))


def test_subclass_without_dict_pickles():
    class Slotted(Record):
        __slots__ = ()

    global _Slotted  # pickle finds classes by module-level name
    _Slotted = Slotted
    Slotted.__qualname__ = "_Slotted"
    r = make(["a"], [1], cls=Slotted)
    loaded = pickle.loads(pickle.dumps(r))
    assert type(loaded) is Slotted and loaded == (1,)


@pytest.mark.parametrize("through_list", [False, True])
def test_releasing_deeply_nested_rows_does_not_overflow_the_stack(through_list):
    # A million levels crash a recursive release with the default 8 MiB C
    # stack; a child process turns such a crash into a failed test.
    script = f"""
from mypgdriver.protocol.record import Record, RecordDescriptor, _restore_record
desc = RecordDescriptor(("inner",))
r = None
for _ in range(1_000_000):
    r = _restore_record(Record, desc, {'([r],)' if through_list else '(r,)'})
del r
print("released")
"""
    root = pathlib.Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", script], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "released\n"), done.stderr


# --- rows built by the protocol (live server) ---------------------------------------


async def test_fetched_rows_of_atomic_values_are_not_gc_tracked(conn):
    row = await conn.fetchrow(
        "SELECT 1 AS i, 'x' AS t, NULL AS n, gen_random_uuid() AS u, ROW(1, 'a') AS r")
    assert type(row["u"]).__name__ == "UUID" and row["r"] == (1, "a")
    assert not gc.is_tracked(row)
    assert gc.is_tracked(await conn.fetchrow("SELECT ARRAY[1] AS a"))  # a list


async def test_fetched_subclass_rows_are_gc_tracked(conn):
    row = await conn.fetchrow("SELECT 1 AS i", record_class=MyRecord)
    assert type(row) is MyRecord and row == (1,)
    assert gc.is_tracked(row)


@pytest.mark.parametrize("cls", [Record, MyRecord])
async def test_decoder_failing_half_way_through_a_row_fails_the_query_cleanly(conn, cls):
    def decode(text: str) -> int:
        if text == "13":
            raise ValueError("unlucky")
        return int(text)

    await conn.set_type_codec("int4", schema="pg_catalog", encoder=str, decoder=decode)
    query = "SELECT 'a' AS t, g AS n, 'z' AS u FROM generate_series(1, 20) g"
    with pytest.raises(ValueError, match="^unlucky$"):
        await conn.fetch(query, record_class=cls)
    rows = await conn.fetch(query.replace("20", "3"), record_class=cls)
    assert rows == [("a", 1, "z"), ("a", 2, "z"), ("a", 3, "z")]
    assert all(type(r) is cls for r in rows)
