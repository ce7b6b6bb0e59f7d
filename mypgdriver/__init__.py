"""mypgdriver: a fast PostgreSQL driver for asyncio."""
from ._version import __version__

__all__ = ["__version__"]
