"""The exception hierarchy of the DB-API (PEP 249), under mypgdriver's own classes.

These are the classes :mod:`mypgdriver.dbapi` exports.  They are real base
classes of the asyncpg-style classes of :mod:`mypgdriver.exceptions`, so one
``except`` works whichever API raised the error:

* every server error (``PostgresError``) is a :class:`DatabaseError`, and the
  class of each SQLSTATE class is the one psycopg gives it
  (:data:`SQLSTATE_CLASSES`): ``UniqueViolationError`` (23505) is an
  :class:`IntegrityError`, ``DivisionByZeroError`` (22012) a
  :class:`DataError`, ``PostgresSyntaxError`` (42601) a
  :class:`ProgrammingError`, a lost connection (08xxx) an
  :class:`OperationalError`;
* errors the driver detects itself (``mypgdriver.exceptions.InterfaceError``
  and ``InternalClientError``, with their subclasses) are an
  :class:`InterfaceError`.

The names clash with asyncpg's (``mypgdriver.exceptions.InterfaceError`` and
``DataError`` are other classes, kept exactly as asyncpg has them), so this
module is not star-imported into :mod:`mypgdriver.exceptions`; import the
classes from :mod:`mypgdriver.dbapi`.
"""
from __future__ import annotations

import builtins

__all__ = ('Warning', 'Error', 'InterfaceError', 'DatabaseError', 'DataError',
           'OperationalError', 'IntegrityError', 'InternalError', 'ProgrammingError',
           'NotSupportedError', 'SQLSTATE_CLASSES')


class Warning(builtins.Exception):  # noqa: A001  (the name PEP 249 gives it)
    """PEP 249's Warning: important warnings (the driver raises none of its own)."""


class Error(builtins.Exception):
    """PEP 249's Error: the base class of every error of the DB-API."""


class InterfaceError(Error):
    """An error of the driver rather than of the database (misuse of the API, a client fault)."""


class DatabaseError(Error):
    """An error reported by the database: every ``mypgdriver.PostgresError``."""


class DataError(DatabaseError):
    """A problem with the processed data (SQLSTATE class 22: division by zero, bad input...)."""


class OperationalError(DatabaseError):
    """The database's operation failed (connection lost, out of resources, serialization...)."""


class IntegrityError(DatabaseError):
    """The relational integrity was violated (SQLSTATE class 23: unique, foreign key...)."""


class InternalError(DatabaseError):
    """The database hit an internal error (SQLSTATE class XX; invalid transaction state)."""


class ProgrammingError(DatabaseError):
    """A programming error: a syntax error, an unknown table, wrong parameters..."""


class NotSupportedError(DatabaseError):
    """A feature the database does not support (SQLSTATE class 0A)."""


#: The PEP 249 class of each SQLSTATE class (the first two characters of a
#: code, or the first one), psycopg's table; any other code is a
#: :class:`DatabaseError`.  tools/gen_errcodes.py reads it to write the bases.
SQLSTATE_CLASSES: dict[str, type[DatabaseError]] = {
    '08': OperationalError,     # connection exception
    '0A': NotSupportedError,    # feature not supported
    '10': ProgrammingError,     # XQuery error
    '20': ProgrammingError,     # case not found
    '21': ProgrammingError,     # cardinality violation
    '22': DataError,            # data exception
    '23': IntegrityError,       # integrity constraint violation
    '24': InternalError,        # invalid cursor state
    '25': InternalError,        # invalid transaction state
    '26': ProgrammingError,     # invalid SQL statement name
    '27': OperationalError,     # triggered data change violation
    '28': OperationalError,     # invalid authorization specification
    '2B': InternalError,        # dependent privilege descriptors still exist
    '2D': InternalError,        # invalid transaction termination
    '2F': OperationalError,     # SQL routine exception
    '34': ProgrammingError,     # invalid cursor name
    '38': OperationalError,     # external routine exception
    '39': OperationalError,     # external routine invocation exception
    '3B': OperationalError,     # savepoint exception
    '3D': ProgrammingError,     # invalid catalog name
    '3F': ProgrammingError,     # invalid schema name
    '40': OperationalError,     # transaction rollback (serialization failure, deadlock)
    '42': ProgrammingError,     # syntax error or access rule violation
    '44': ProgrammingError,     # WITH CHECK OPTION violation
    '53': OperationalError,     # insufficient resources
    '54': OperationalError,     # program limit exceeded
    '55': OperationalError,     # object not in prerequisite state
    '57': OperationalError,     # operator intervention (query canceled, admin shutdown)
    '58': OperationalError,     # system error
    'F': OperationalError,      # configuration file error
    'H': OperationalError,      # foreign data wrapper error
    'P': ProgrammingError,      # PL/pgSQL error
    'X': InternalError,         # internal error
}


def sqlstate_class(sqlstate: str) -> type[DatabaseError]:
    """The PEP 249 class of an SQLSTATE (:data:`SQLSTATE_CLASSES`, else DatabaseError)."""
    return (SQLSTATE_CLASSES.get(sqlstate[:2]) or SQLSTATE_CLASSES.get(sqlstate[:1])
            or DatabaseError)
