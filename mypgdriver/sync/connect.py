"""connect() of the sync API: the asyncio connector's own coroutine, driven by a SyncGlue.

The function is generated from the asyncio :func:`mypgdriver.connect` by
tools/gen_sync.py (mypgdriver/sync/_connect.py): its parameters, their
defaults and its docstring follow the asyncio ones by regenerating.  This
module is its public home (``from mypgdriver.sync.connect import connect``).
"""
from mypgdriver.sync._connect import connect

__all__ = ['connect']
