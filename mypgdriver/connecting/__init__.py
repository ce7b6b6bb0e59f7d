"""Opening a connection, for every face: parameters, hosts, TLS, authentication, cancel.

See docs/dev/architecture.rst.
"""
