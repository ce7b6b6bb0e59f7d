"""The policy of every operation, shared by every face: the Session and its owned parts.

See docs/dev/architecture.rst.  Nothing here imports a face (the asyncio
Connection, mypgdriver.sync, the DB-API) or waits through a running event loop.
"""
