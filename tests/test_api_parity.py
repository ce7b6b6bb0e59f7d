"""The asyncio API and mypgdriver.sync offer the same calls, with the same parameters.

For each pair of classes (and the two connect() and create_pool()), every
public name of one side is on the other, and every shared method takes the
same parameters (names, kinds, defaults) and returns the same type once the
asyncio side's ``Awaitable[...]`` / ``Coroutine[..., X]`` is unwrapped and its
class names are mapped to the sync ones.  Parameter annotations are not
compared: a sync face may name a narrower type (``CopySource`` for ``Any``).

Names that belong on one side only are listed with the reason.  Differences
that exist today and should go are listed as KNOWN: the test passes with
them and fails on any new one, and also when a KNOWN one is gone (then
delete its entry).  No server is needed.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable, NamedTuple

import pytest

import mypgdriver
import mypgdriver.cursor
import mypgdriver.pool
import mypgdriver.prepared
import mypgdriver.sync
import mypgdriver.transaction


class Pair(NamedTuple):
    name: str
    asyncio_side: Any
    sync_side: Any


CLASS_PAIRS = [
    Pair('Connection', mypgdriver.Connection, mypgdriver.sync.Connection),
    Pair('PreparedStatement', mypgdriver.prepared.PreparedStatement,
         mypgdriver.sync.PreparedStatement),
    Pair('Transaction', mypgdriver.transaction.Transaction, mypgdriver.sync.Transaction),
    Pair('CursorFactory', mypgdriver.cursor.CursorFactory, mypgdriver.sync.CursorFactory),
    Pair('Cursor', mypgdriver.cursor.Cursor, mypgdriver.sync.Cursor),
    Pair('Pool', mypgdriver.Pool, mypgdriver.sync.Pool),
    Pair('PoolConnectionProxy', mypgdriver.pool.PoolConnectionProxy,
         mypgdriver.sync.PoolConnectionProxy),
]

FUNCTION_PAIRS = [
    Pair('connect', mypgdriver.connect, mypgdriver.sync.connect),
    Pair('create_pool', mypgdriver.create_pool, mypgdriver.sync.create_pool),
]

#: (pair, name) -> why only the asyncio side has it.
ONLY_ASYNCIO: dict[tuple[str, str], str] = {
    # An event loop to run on: the sync API runs without one.
    ('connect', 'loop'): 'no event loop in the sync API',
    ('create_pool', 'loop'): 'no event loop in the sync API',
}

#: (pair, name) -> why only the sync side has it.
ONLY_SYNC: dict[tuple[str, str], str] = {
    # asyncio delivers notifications to add_listener() callbacks from the
    # loop; a blocking program has no loop to run them, so it reads them
    # with a generator that blocks on the socket.
    ('Connection', 'notifies'): 'no loop to deliver notifications: a blocking generator',
    # ``await conn.cursor(q)`` binds the portal in asyncio; without await the
    # sync factory binds it with open(), or with its first fetch/fetchrow/forward.
    ('CursorFactory', 'open'): 'stands for `await conn.cursor(q)`',
    ('CursorFactory', 'fetch'): 'the Cursor method on the factory: `await` has no sync form',
    ('CursorFactory', 'fetchrow'): 'the Cursor method on the factory: `await` has no sync form',
    ('CursorFactory', 'forward'): 'the Cursor method on the factory: `await` has no sync form',
}

#: Differences found when this test was written (issue 33), each to be
#: removed by making the two sides agree (in mypgdriver/, not here).
#: (pair, name) -> what differs, as the test describes it.
KNOWN: dict[tuple[str, str], str] = {
}

#: Class names of the asyncio side and what stands for them on the sync side.
ASYNCIO_TO_SYNC_NAMES = {
    # `async with pool.acquire() as c` / `c = await pool.acquire()` give the
    # proxy; the sync acquire() returns the proxy itself.
    'PoolAcquireContext': 'PoolConnectionProxy',
    'AsyncIterator': 'Iterator',
    'AsyncIterable': 'Iterable',
    'AsyncContextManager': 'ContextManager',
}

#: typing's aliases of the builtin generics: the same types, spelled two ways.
TYPING_ALIASES = {'List': 'list', 'Dict': 'dict', 'Set': 'set', 'FrozenSet': 'frozenset',
                  'Tuple': 'tuple', 'Type': 'type'}

#: The asyncio dunders of a protocol and their sync counterparts.
DUNDER_COUNTERPARTS = {'__aenter__': '__enter__', '__aexit__': '__exit__',
                       '__aiter__': '__iter__', '__anext__': '__next__'}


def public_names(obj: Any) -> set[str]:
    return {name for name in dir(obj) if not name.startswith('_')}


def _split_top_level(text: str) -> list[str]:
    """The comma-separated arguments of a subscription, nested brackets kept whole."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == '[':
            depth += 1
        elif char == ']':
            depth -= 1
        elif char == ',' and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _awaited(annotation: str) -> str:
    """What awaiting a value of type `annotation` gives: X for Awaitable[X] / Coroutine[.., X]."""
    match = re.fullmatch(r'(Awaitable|Coroutine)\[(.*)\]', annotation)
    if match is None:
        return annotation
    return _split_top_level(match.group(2))[-1]


def normalized_annotation(annotation: Any, *, asyncio_side: bool) -> str:
    """`annotation` as comparable text: unqualified names, awaited, mapped to the sync names."""
    if annotation is inspect.Signature.empty:
        return '<none>'
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    text = text.replace("'", '').replace('"', '')
    text = re.sub(r'\b(?:\w+\.)+(\w+)', r'\1', text)    # mypgdriver.prepared.X -> X
    text = re.sub(r'\b\w+\b', lambda m: TYPING_ALIASES.get(m.group(), m.group()), text)
    if asyncio_side:
        text = _awaited(text)
        text = re.sub(r'\b\w+\b', lambda m: ASYNCIO_TO_SYNC_NAMES.get(m.group(), m.group()), text)
    return text


def _default(value: Any) -> Any:
    """A parameter default, a class by its name (Connection on each side)."""
    return value.__qualname__ if inspect.isclass(value) else value


def signature_differences(pair: str, asyncio_call: Callable[..., Any],
                          sync_call: Callable[..., Any]) -> dict[tuple[str, str], str]:
    """(pair, name) -> what differs between the two signatures, for each difference."""
    found: dict[tuple[str, str], str] = {}
    a = inspect.signature(asyncio_call)
    s = inspect.signature(sync_call)
    for name in a.parameters.keys() - s.parameters.keys():
        found[pair, name] = 'only on the asyncio side'
    for name in s.parameters.keys() - a.parameters.keys():
        found[pair, name] = 'only on the sync side'
    a_order = [n for n in a.parameters if n in s.parameters]
    s_order = [n for n in s.parameters if n in a.parameters]
    if a_order != s_order:
        found[pair, '(order)'] = f'parameters in another order: {a_order} / {s_order}'
    for name in a_order:
        pa, ps = a.parameters[name], s.parameters[name]
        if pa.kind != ps.kind:
            found[pair, name] = f'kind {pa.kind.name} / {ps.kind.name}'
        elif _default(pa.default) != _default(ps.default):
            found[pair, name] = f'default {pa.default!r} / {ps.default!r}'
    a_return = normalized_annotation(a.return_annotation, asyncio_side=True)
    s_return = normalized_annotation(s.return_annotation, asyncio_side=False)
    if hasattr(asyncio_call, '__wrapped__'):
        # A @contextmanager generator annotated Iterator[X] returns a
        # ContextManager[X] once decorated (what the sync side says).
        a_return = re.sub(r'^Iterator\[(.*)\]$', r'ContextManager[\1]', a_return)
    if a_return != s_return:
        found[pair, '(return)'] = f'returns {a_return} (asyncio) / {s_return} (sync)'
    return found


def _is_method(cls: type, name: str) -> bool:
    return inspect.isroutine(inspect.getattr_static(cls, name))


def class_differences(pair: Pair) -> dict[tuple[str, str], str]:
    """Every difference between the two classes of `pair` (names, then signatures)."""
    found: dict[tuple[str, str], str] = {}
    a_names, s_names = public_names(pair.asyncio_side), public_names(pair.sync_side)
    for name in a_names - s_names:
        found[pair.name, name] = 'only on the asyncio side'
    for name in s_names - a_names:
        found[pair.name, name] = 'only on the sync side'
    for name in sorted(a_names & s_names):
        a_method = _is_method(pair.asyncio_side, name)
        if a_method != _is_method(pair.sync_side, name):
            found[pair.name, name] = 'a method on one side, an attribute on the other'
            continue
        if not a_method:
            continue
        differences = signature_differences(
            name, getattr(pair.asyncio_side, name), getattr(pair.sync_side, name))
        if differences:
            # one entry per method, saying each of its differences
            found[pair.name, name] = '; '.join(
                what if detail == '(return)' else f'{detail}: {what}'
                for (_, detail), what in sorted(differences.items()))
    return found


def expected_differences(pair: str) -> dict[tuple[str, str], str]:
    """The explained one-sided names and the KNOWN differences of `pair`."""
    expected = {key: 'only on the asyncio side' for key in ONLY_ASYNCIO if key[0] == pair}
    expected.update({key: 'only on the sync side' for key in ONLY_SYNC if key[0] == pair})
    expected.update({key: what for key, what in KNOWN.items() if key[0] == pair})
    return expected


def _report(found: dict[tuple[str, str], str], expected: dict[tuple[str, str], str]) -> str:
    new = {k: v for k, v in found.items() if expected.get(k) != v}
    gone = {k: v for k, v in expected.items() if k not in found}
    return (f'new differences (make the sides agree, or explain them in ONLY_*): {new}; '
            f'listed differences no longer present (delete their entries): {gone}')


@pytest.mark.parametrize('pair', CLASS_PAIRS, ids=[p.name for p in CLASS_PAIRS])
def test_classes_have_the_same_public_methods_and_signatures(pair: Pair) -> None:
    found = class_differences(pair)
    expected = expected_differences(pair.name)
    assert found == expected, _report(found, expected)


@pytest.mark.parametrize('pair', FUNCTION_PAIRS, ids=[p.name for p in FUNCTION_PAIRS])
def test_module_functions_take_the_same_parameters(pair: Pair) -> None:
    found = signature_differences(pair.name, pair.asyncio_side, pair.sync_side)
    expected = expected_differences(pair.name)
    assert found == expected, _report(found, expected)


@pytest.mark.parametrize('pair', CLASS_PAIRS, ids=[p.name for p in CLASS_PAIRS])
def test_async_protocols_have_their_sync_counterparts(pair: Pair) -> None:
    # `async with` / `async for` on one side are `with` / `for` on the other.
    missing = {sync_name for async_name, sync_name in DUNDER_COUNTERPARTS.items()
               if hasattr(pair.asyncio_side, async_name)
               and not hasattr(pair.sync_side, sync_name)}
    assert missing == set()


def test_known_and_one_sided_entries_name_existing_pairs() -> None:
    # A misspelt pair in a list would silently excuse nothing.
    pairs = {p.name for p in CLASS_PAIRS + FUNCTION_PAIRS}
    assert {key[0] for key in [*ONLY_ASYNCIO, *ONLY_SYNC, *KNOWN]} <= pairs


@pytest.mark.parametrize('annotation, asyncio_side, expected', [
    ('Coroutine[Any, Any, List[Record]]', True, 'list[Record]'),
    ("Awaitable['mypgdriver.prepared.PreparedStatement']", True, 'PreparedStatement'),
    ("'PoolAcquireContext'", True, 'PoolConnectionProxy'),
    ('Optional[Dict[str, Any]]', False, 'Optional[dict[str, Any]]'),
    ('Coroutine[Any, Any, str]', False, 'Coroutine[Any, Any, str]'),
])
def test_annotation_normalization(annotation: str, asyncio_side: bool, expected: str) -> None:
    assert normalized_annotation(annotation, asyncio_side=asyncio_side) == expected
