# cython: language_level=3
"""ConvertedQuery: a query as :mod:`mypgdriver.paramstyle` rewrote it, and how its values bind.

Compiled: the DB-API cursor's execute() (mypgdriver/dbapi/cursorcore.pyx)
binds every call's parameters through arguments(), whose common case (a
tuple or list of the right length) is then one C call.  Created by
:func:`mypgdriver.paramstyle.convert`, which documents the rules.
"""
from collections.abc import Mapping, Sequence

from mypgdriver.exceptions import QueryParameterError

__all__ = ('ConvertedQuery',)


cdef class ConvertedQuery:
    """A query with its placeholders rewritten as ``$n``, and how to bind its values.

    `text` is what is sent to the server.  `names` is None for positional
    placeholders (``%s``: `count` of them, bound from a sequence), else the
    name of each ``$n`` in order (bound from a mapping).
    """


    def __init__(self, str text, tuple names, Py_ssize_t count):
        self.text = text
        self.names = names
        self.count = count

    def __repr__(self):
        return f'<ConvertedQuery {self.text!r} names={self.names!r} count={self.count}>'

    cpdef arguments(self, params, bint allow_unused=True):
        """The values of ``$1``, ``$2``... taken from `params`.

        A sequence (not a str or bytes) for positional placeholders, with one
        value per placeholder; a mapping for named ones.  With
        `allow_unused` false, mapping keys the query does not use are an
        error too.  Raises :exc:`~mypgdriver.exceptions.QueryParameterError`.
        """
        names = self.names
        if names is None:
            if type(params) is tuple or type(params) is list:
                if len(params) == self.count:
                    return params       # the hot path: nothing to build
            elif (isinstance(params, Mapping) and self.count) or isinstance(
                    params, (str, bytes, bytearray)) or not isinstance(params, Sequence):
                if isinstance(params, Mapping) and not self.count:
                    return ()           # no placeholders: psycopg accepts any mapping
                raise _wrong_container(params, self.count, named=False)
            if len(params) != self.count:
                raise QueryParameterError(
                    f'the query has {self.count} placeholder{_s(self.count)} but '
                    f'{len(params)} parameter{_s(len(params))} {_were(len(params))} given')
            return tuple(params)
        if not isinstance(params, Mapping):
            raise _wrong_container(params, len(names), named=True)
        try:
            values = tuple([params[name] for name in names])
        except KeyError:
            missing = [name for name in names if name not in params]
            raise QueryParameterError(
                f'no value for the query parameter{_s(len(missing))} '
                f'{", ".join(map(repr, missing))}: the mapping given has '
                f'{", ".join(map(repr, params)) or "no keys"}') from None
        if not allow_unused and len(params) != len(names):
            unused = [key for key in params if key not in names]
            raise QueryParameterError(
                f'the query does not use the parameter{_s(len(unused))} '
                f'{", ".join(map(repr, unused))}')
        return values


cdef str _s(Py_ssize_t n):
    return '' if n == 1 else 's'


cdef str _were(Py_ssize_t n):
    return 'was' if n == 1 else 'were'


cdef _wrong_container(params, Py_ssize_t count, bint named):
    kind = type(params).__name__
    if named:
        return QueryParameterError(
            f'the query uses named placeholders (%(name)s or :name): pass the values in a '
            f'mapping, not a {kind}')
    if count == 0:
        return QueryParameterError(
            f'the query has no placeholders; parameters must be a sequence or a mapping, '
            f'not a {kind}')
    if isinstance(params, Mapping):
        return QueryParameterError(
            f'the query uses positional placeholders (%s): pass the values in a sequence '
            f'(a tuple or list), not a {kind}; or write the placeholders as %(name)s')
    return QueryParameterError(
        f'parameters must be a sequence (a tuple or list) of values, not a {kind}',
        hint='A single value is written as a tuple of one: (value,).')
