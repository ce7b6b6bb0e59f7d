"""The test suite's conftest: it only registers the shared fixtures.

The fixtures (the session's throwaway PostgreSQL server, connections to it,
ports) live in tests/support/fixtures.py, a pytest plugin, so that a test
file or another plugin can import them by name.  Set
``MYPGDRIVER_TEST_DSN=postgresql://user:pw@host:port/db`` to run against an
existing server instead; tests that need to change its pg_hba.conf (the
authentication-method roles) then skip via ``pg_cluster.require_local()``.
"""
from __future__ import annotations

# pytest_plugins is honoured in the top conftest only: the reason this file exists.
pytest_plugins = ['tests.support.fixtures']
