# cython: language_level=3
"""The ``with`` half of the sync Transaction, compiled (Ctrl-C safety, issue 24).

``with conn.transaction():`` must leave no transaction open by any path,
KeyboardInterrupt included.  Python raises KeyboardInterrupt wherever
Python code runs: in a Python ``__enter__``, between the BEGIN's return and
``return self`` (the block is then open and its ``__exit__`` never called),
or in a Python ``__exit__`` before the ROLLBACK is sent.  These methods are
compiled, so the signal cannot land inside them; one landing in the
policy's Python code while they drive it closes the connection
(mypgdriver/sync/driver/glue.pyx), which ends the transaction on the server.
"""

__all__ = ('TransactionBlock',)


cdef class TransactionBlock:
    """``__enter__``/``__exit__`` over an asyncio Transaction, driven by a glue's ``run``."""

    cdef readonly object _run
    cdef readonly object _transaction

    def __init__(self, run, transaction):
        self._run = run
        self._transaction = transaction

    def __enter__(self):
        # (None, as the asyncio Transaction's __aenter__)
        return self._run(self._transaction.__aenter__())

    def __exit__(self, exc_type, exc, tb):
        return self._run(self._transaction.__aexit__(exc_type, exc, tb))
