"""pytest plugin that tools/sqlalchemy_suite.py loads into SQLAlchemy's test run.

* Registers ``postgresql+mypgdriver`` (the DB-API dialect) and
  ``postgresql+mypgdriver_async`` from this checkout, whether or not the
  installed package's entry points are current (an editable install made
  before the entry points existed, a build in place).
* With ``MYPGDRIVER_SQLA_RUN_AS=asyncpg`` (or ``psycopg``), makes SQLAlchemy's
  test requirements that name that driver (``only_on("+asyncpg")``,
  ``skip_if("+psycopg")``, ``__only_on__ = "postgresql+asyncpg"``) apply to
  mypgdriver too. SQLAlchemy's suite selects many tests by driver name (all
  the range round trips, each adapter's own tests); without this they would
  not run for a driver SQLAlchemy does not know, and the comparison with the
  reference driver would be over a different set of tests. Version
  comparisons against a driver (``"+asyncpg<0.30"``) are not aliased: they
  compare driver versions, which mean nothing across drivers.
* Stops the run when the SQLAlchemy imported is not the version asked for
  (``MYPGDRIVER_SQLA_VERSION``).
* Makes the compliance suite's server-side cursor check
  (``ServerSideCursorsTest._is_server_side``, a table of driver names) ask
  mypgdriver's cursors: the async dialect's adapted cursor has
  ``server_side``, a DB-API cursor a ``name`` when it is a server-side one
  (as psycopg's).
"""
from __future__ import annotations

import os

import pytest
from sqlalchemy.dialects import registry

registry.register(
    "postgresql.mypgdriver", "mypgdriver.sqlalchemy_sync", "PGDialectSync_mypgdriver")
registry.register(
    "postgresql.mypgdriver_async", "mypgdriver.sqlalchemy_dialect", "PGDialectAsync_mypgdriver")

DRIVER = "mypgdriver"


def _alias_requirements(aliased: str) -> None:
    from sqlalchemy.testing import exclusions

    original = exclusions.SpecPredicate.__call__

    def matches(self, config):
        if (config is not None and self.op is None and "+" in self.db
                and self.db.split("+")[1] == aliased
                and config.db.dialect.driver == DRIVER):
            backend = self.db.split("+")[0]
            return not backend or config.db.name == backend
        return original(self, config)

    exclusions.SpecPredicate.__call__ = matches


def _server_side_check() -> None:
    from sqlalchemy.testing.suite import test_results

    original = test_results.ServerSideCursorsTest._is_server_side

    def is_server_side(self, cursor):
        if self.engine.dialect.driver == DRIVER:
            if self.engine.dialect.is_async:
                return cursor.server_side
            return bool(getattr(cursor, "name", None))
        return original(self, cursor)

    test_results.ServerSideCursorsTest._is_server_side = is_server_side


# sqlalchemy.testing must not be imported before SQLAlchemy's test/conftest.py
# has set up its plugin: patch after that, and the suite's test classes once
# they are collected.

@pytest.hookimpl(trylast=True)
def pytest_configure(config) -> None:
    import sqlalchemy

    expected = os.environ.get("MYPGDRIVER_SQLA_VERSION")
    if expected and sqlalchemy.__version__ != expected:
        raise pytest.UsageError(
            f"SQLAlchemy {sqlalchemy.__version__} from {sqlalchemy.__file__} was imported, "
            f"not {expected}")
    aliased = os.environ.get("MYPGDRIVER_SQLA_RUN_AS")
    if aliased:
        _alias_requirements(aliased)


def pytest_collection_finish(session) -> None:
    _server_side_check()
