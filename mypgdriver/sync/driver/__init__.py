"""The sync API's driver: the event loop's stand-in that runs the shared core blocking.

SyncGlue (glue.pyx) drives the asyncio face's coroutines without an event
loop over blocking transports (transport.pyx, sockets.py); runner.pyx is a
connection's call lock, blocks.pyx the compiled ``with`` of a transaction,
cancel.py cancel() and terminate() from another thread, backlog.py the
notifications waiting for notifies(), relays.py the callbacks that get the
sync connection; poolcore.pyx and pool_hooks.py drive the pool core for
the sync pool.  Not an API: the
public face is mypgdriver.sync (docs/dev/architecture.rst, docs/dev/sync-design.md).
"""
