"""Helpers of the test suite: the shared fixtures (fixtures.py, a pytest plugin), waiting
for state (waiting.py, backends.py), certificates, TCP proxies, fake servers."""
