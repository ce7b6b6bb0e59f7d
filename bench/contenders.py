"""Who is measured: the name of every contender, its driver, and each table's baseline and control.

Each part of the suite compares its own contenders: the throughput cells
compare drivers ("asyncpg", "mypgdriver", "mypgdriver-sync" for mypgdriver's
blocking API, ...), the pipeline scenario ways of sharing a connection
("mypgdriver-1conn", "asyncpg-pool10", ...), the pool scenario pools
("asyncpg-pool", ...), the sync pool scenario thread-safe pools
("psycopg-sync-pool", ...), the pooler scenario each driver's
pooler-safe configuration ("asyncpg-nocache", "mypgdriver-cache", ...), the
dict-row cells each driver's dict rows on pg_type ("mypgdriver-dict",
"psycopg-dict", ...).  A
`Lineup` holds one part's names: the contenders in table order, the baseline
every ratio is taken against, and the label of the A/A control (the baseline
measured a second time in the same run, so that the noise shows next to the
ratios).

The runner and the scenarios plan their cells from these names, and the
report orders, compares and colours results by them; this module imports
nothing else from the suite, so that neither side needs the other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

OURS = "mypgdriver"  # the driver every chart highlights


@dataclass(frozen=True)
class Lineup:
    """The contenders of one part of the suite, as its tables show them."""

    contenders: tuple[str, ...]  # table order; the run puts the baseline first
    baseline: str
    control: str  # the label the baseline's second (A/A) measurement is filed under
    drivers: Mapping[str, str]  # contender -> the driver (`--drivers` name) it belongs to
    # contender -> the name its version is listed under in the machine info,
    # where that is not its driver's (a package of its own, another program).
    version_names: Mapping[str, str] = field(default_factory=dict)

    def driver_of(self, label: str) -> str | None:
        """The driver a contender (or this lineup's control) belongs to, None if unknown."""
        if label == self.control:
            return self.drivers[self.baseline]
        return self.drivers.get(label)

    def version_name(self, contender: str) -> str | None:
        """Under which name the machine info lists the version `contender` reports."""
        return self.version_names.get(contender, self.drivers.get(contender))

    def run_order(self, drivers: Sequence[str], aa_control: bool) -> list[tuple[str, str]]:
        """(contender, label) pairs in run order for the suite's `--drivers`.

        The baseline first, the others in table order, and the baseline once
        more last, filed under the control label (the A/A control), when
        `aa_control` asks for it.
        """
        chosen = [c for c in self.contenders if self.drivers[c] in drivers]
        chosen.sort(key=lambda c: c != self.baseline)
        pairs = [(c, c) for c in chosen]
        if aa_control and self.baseline in chosen:
            pairs.append((self.baseline, self.control))
        return pairs

    def order(self, labels: list[str]) -> list[str]:
        """`labels` without the control, in table order; unknown labels last, as given."""
        rank = {c: i for i, c in enumerate(self.contenders)}
        seen = dict.fromkeys(label for label in labels if label != self.control)
        return sorted(seen, key=lambda label: rank.get(label, len(rank)))


OURS_SYNC = "mypgdriver-sync"  # mypgdriver's blocking API (mypgdriver.sync), a driver of its own
# mypgdriver's DB-API module (mypgdriver.dbapi) on the blocking API, used as
# psycopg2 code uses psycopg2: a driver of its own, as the sync API is.
OURS_DBAPI = "mypgdriver-dbapi"

PYTHON_DRIVERS = ("asyncpg", "mypgdriver", OURS_SYNC, OURS_DBAPI, "psycopg", "psycopg-async",
                  "psycopg2", "psqlpy")

THROUGHPUT = Lineup(
    contenders=(*PYTHON_DRIVERS, "pgbench"),
    baseline="asyncpg",
    control="asyncpg (A/A)",
    drivers={name: name for name in (*PYTHON_DRIVERS, "pgbench")},
)

# Dict rows on pg_type: each driver's dict rows, run in the pg_type cells
# next to the drivers' own rows (bench/drivers: DICT_ROW_DRIVERS), reported
# in a table of their own.  psycopg's dict_row is the baseline: the row
# factory mypgdriver.rows follows.
# No A/A control of its own: the pg_type cells' (asyncpg measured twice) is
# the noise of these cells too.
DICT_ROWS = Lineup(
    contenders=("psycopg-dict", "mypgdriver-dict", "mypgdriver-sync-dict", "psycopg-async-dict",
                "psycopg2-dict", "psqlpy-dict"),
    baseline="psycopg-dict",
    control="psycopg-dict (A/A)",  # not run (see above)
    drivers={
        "psycopg-dict": "psycopg",
        "mypgdriver-dict": "mypgdriver",
        "mypgdriver-sync-dict": OURS_SYNC,
        "psycopg-async-dict": "psycopg-async",
        "psycopg2-dict": "psycopg2",
        "psqlpy-dict": "psqlpy",
    },
)
DICT_ROWS_WORKLOAD = "pg_type"  # the one workload the dict-row contenders run
DICT_ROWS_SCENARIO = "dict_rows"  # their name in --workloads / --skip

PIPELINE = Lineup(
    contenders=("asyncpg-pool10", "mypgdriver-1conn", "asyncpg-pool1", "psycopg-1conn",
                "psycopg-pipeline", "mypgdriver-sync-pipeline", "psycopg-sync-pipeline",
                "pgbench-pipeline", "pgbench-pipeline-sync",
                "pgbench-pipeline-extended", "pgbench-1conn"),
    baseline="asyncpg-pool10",
    control="asyncpg-pool10 (A/A)",
    drivers={
        "asyncpg-pool10": "asyncpg",
        "mypgdriver-1conn": "mypgdriver",
        "asyncpg-pool1": "asyncpg",
        "psycopg-1conn": "psycopg-async",
        "psycopg-pipeline": "psycopg-async",
        "mypgdriver-sync-pipeline": OURS_SYNC,
        "psycopg-sync-pipeline": "psycopg",
        "pgbench-pipeline": "pgbench",
        "pgbench-pipeline-sync": "pgbench",
        "pgbench-pipeline-extended": "pgbench",
        "pgbench-1conn": "pgbench",
    },
    # Run by a pgbench 17+ (for \syncpipeline), maybe not the other cells' pgbench.
    version_names={"pgbench-pipeline-sync": "pgbench-pipeline-sync"},
)
PIPELINE_CEILING = "pgbench-pipeline"  # one Sync per 100 statements
PIPELINE_SYNC_CEILING = "pgbench-pipeline-sync"  # a Sync per statement: mypgdriver's shape
PIPELINE_OURS = "mypgdriver-1conn"  # the contender the pipeline summary line compares

POOL = Lineup(
    contenders=("asyncpg-pool", "mypgdriver-pool", "mypgdriver-connect", "psycopg-pool",
                "psqlpy-pool"),
    baseline="asyncpg-pool",
    control="asyncpg-pool (A/A)",
    drivers={
        "asyncpg-pool": "asyncpg",
        "mypgdriver-pool": "mypgdriver",
        "mypgdriver-connect": "mypgdriver",
        # psycopg_pool's AsyncConnectionPool runs psycopg 3's async connections.
        "psycopg-pool": "psycopg-async",
        "psqlpy-pool": "psqlpy",  # psqlpy's own ConnectionPool
    },
    version_names={"psycopg-pool": "psycopg_pool"},
)

POOL_SHORTCUTS = Lineup(
    contenders=("asyncpg-shortcuts", "mypgdriver-shortcuts"),
    baseline="asyncpg-shortcuts",
    control="asyncpg-shortcuts (A/A)",
    drivers={"asyncpg-shortcuts": "asyncpg", "mypgdriver-shortcuts": "mypgdriver"},
)

# The sync pool scenario (bench/sync_pool_scenario.py): threads, thread-safe pools.
SYNC_POOL = Lineup(
    contenders=("psycopg-sync-pool", "mypgdriver-sync-pool", "psycopg2-pool"),
    baseline="psycopg-sync-pool",
    control="psycopg-sync-pool (A/A)",
    drivers={
        # psycopg_pool's ConnectionPool runs psycopg 3's sync connections.
        "psycopg-sync-pool": "psycopg",
        "mypgdriver-sync-pool": OURS_SYNC,
        "psycopg2-pool": "psycopg2",
    },
    version_names={"psycopg-sync-pool": "psycopg_pool"},
)

# Through a transaction-mode pgbouncer, each driver in its best pooler-safe
# configuration (bench/pooler_scenario.py says what each one is and why).
POOLER = Lineup(
    contenders=("asyncpg-nocache", "mypgdriver-cache", "psycopg-unprepared",
                "psycopg-async-unprepared", "psycopg-prepared", "psycopg2",
                "pgbench-prepared"),
    baseline="asyncpg-nocache",
    control="asyncpg-nocache (A/A)",
    drivers={
        "asyncpg-nocache": "asyncpg",
        "mypgdriver-cache": "mypgdriver",
        "psycopg-unprepared": "psycopg",
        "psycopg-async-unprepared": "psycopg-async",
        "psycopg-prepared": "psycopg",
        "psycopg2": "psycopg2",
        "pgbench-prepared": "pgbench",
    },
)
POOLER_OURS = "mypgdriver-cache"  # the contender the pooler summary line compares
POOLER_REFERENCE = "pgbench-prepared"  # the C client, drawn as a line in the chart

LINEUPS = (THROUGHPUT, DICT_ROWS, PIPELINE, POOL, POOL_SHORTCUTS, SYNC_POOL, POOLER)


def is_control(label: str) -> bool:
    """Whether `label` is the A/A control of one of the lineups."""
    return any(label == lineup.control for lineup in LINEUPS)


def driver_of(label: str) -> str | None:
    """The driver a contender or control label of any lineup belongs to."""
    for lineup in LINEUPS:
        driver = lineup.driver_of(label)
        if driver is not None:
            return driver
    return None


def is_main_contender(label: str) -> bool:
    """Whether `label` is the first contender of its driver in its lineup.

    Charts draw a driver's other contenders (mypgdriver-connect next to
    mypgdriver-pool, asyncpg-pool1 next to asyncpg-pool10) in its colour
    with a pattern, so that one colour still means one driver.
    """
    for lineup in LINEUPS:
        if label in lineup.drivers:
            driver = lineup.drivers[label]
            return next(c for c in lineup.contenders if lineup.drivers[c] == driver) == label
    return True
