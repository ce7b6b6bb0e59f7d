"""pytest plugin that tools/sqlalchemy_suite.py loads into SQLAlchemy's test run.

* Registers ``postgresql+mypgdriver`` from this checkout, whether or not the
  installed package's entry points are current (an editable install made
  before the entry point existed, a build in place).
* With ``MYPGDRIVER_SQLA_AS_ASYNCPG=1``, makes SQLAlchemy's test requirements
  that name the asyncpg driver (``only_on("+asyncpg")``,
  ``skip_if("+asyncpg")``, ``__only_on__ = "postgresql+asyncpg"``) apply to
  mypgdriver too. SQLAlchemy's suite selects many tests by driver name (all
  the range round trips, the asyncpg adapter's own tests); without this they
  would not run for a driver SQLAlchemy does not know, and the comparison
  with asyncpg would be over a different set of tests. Version comparisons
  against the asyncpg DBAPI (``"+asyncpg<0.30"``) are not aliased: they
  compare driver versions, which mean nothing across drivers.
* Stops the run when the SQLAlchemy imported is not the version asked for
  (``MYPGDRIVER_SQLA_VERSION``).
* Makes the compliance suite's server-side cursor check
  (``ServerSideCursorsTest._is_server_side``, a table of driver names) ask
  mypgdriver's adapted cursor, as it asks asyncpg's.
"""
from __future__ import annotations

import os

import pytest
from sqlalchemy.dialects import registry

registry.register(
    "postgresql.mypgdriver", "mypgdriver.sqlalchemy_dialect", "PGDialect_mypgdriver")

DRIVER = "mypgdriver"
ALIASED = "asyncpg"


def _alias_asyncpg_requirements() -> None:
    from sqlalchemy.testing import exclusions

    original = exclusions.SpecPredicate.__call__

    def matches(self, config):
        if (config is not None and self.op is None and "+" in self.db
                and self.db.split("+")[1] == ALIASED
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
            return cursor.server_side
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
    if os.environ.get("MYPGDRIVER_SQLA_AS_ASYNCPG") == "1":
        _alias_asyncpg_requirements()


def pytest_collection_finish(session) -> None:
    _server_side_check()
