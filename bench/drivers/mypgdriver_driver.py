"""mypgdriver: the asyncpg driver module pointed at our package.

mypgdriver's API is asyncpg's, so sharing the calls keeps the comparison
exact: any difference in the numbers comes from the driver, not the harness.
"""
from .asyncpg_driver import AsyncpgStyleDriver, MypgdriverDictRows

DRIVER = AsyncpgStyleDriver("mypgdriver", "mypgdriver")
# The dict-row cells on pg_type: the same calls with dict rows.
DICT_DRIVER = MypgdriverDictRows("mypgdriver-dict", "mypgdriver")
