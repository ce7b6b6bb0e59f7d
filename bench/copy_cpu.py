"""Client CPU per copyfrom run (10,000 rows): the DB-API's COPY against copy_records_to_table.

    python -m bench.copy_cpu [--rounds 40]

Runs the `copyfrom` workload's COPY through three clients in one process,
against one throwaway server (`bench.server.BenchServer`, or
`$MYPGDRIVER_BENCH_DSN`): the DB-API's binary COPY (the bench driver's
`cur.copy(... FORMAT BINARY)` + `set_types` + `write_row`), the DB-API's
text COPY (`write_row` without types, what the driver did before issue
34), and mypgdriver.sync's `copy_records_to_table`.  Each round runs each
client once, in a rotating order, timed with `time.process_time()`: this
process's CPU only (the server's is not counted), so the placement of the
server matters less than for wall-clock cells.  The table is truncated
after every round.  Prints the median and quartiles in ms per run, the
ratios of the medians, and the fastest run.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

from bench.drivers import mypgdriver_dbapi_driver, mypgdriver_sync_driver
from bench.server import BenchServer
from bench.workloads import BY_NAME

WARMUP_ROUNDS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    workload = BY_NAME["copyfrom"]
    server = BenchServer.start()
    try:
        for sql in workload.teardown + workload.setup:
            server.psql(sql)
        measure(server, workload, args.rounds)
    finally:
        for sql in workload.teardown:
            server.psql(sql)
        server.stop()


def measure(server: BenchServer, workload, rounds: int) -> None:
    import mypgdriver.dbapi

    binary = mypgdriver_dbapi_driver.DRIVER.open(server.params, workload)
    dbapi_conn = mypgdriver.dbapi.connect(**server.params)
    dbapi_conn.autocommit = True
    text = mypgdriver_dbapi_driver.text_copy(dbapi_conn, workload)
    sync = mypgdriver_sync_driver.DRIVER.open(server.params, workload)
    clients: dict[str, Callable[[], int]] = {
        "dbapi binary (set_types + write_row)": binary.run,
        "dbapi text (write_row)": text,
        "sync copy_records_to_table": sync.run,
    }
    truncate = dbapi_conn.cursor()
    times: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for i in range(WARMUP_ROUNDS + rounds):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            start = time.process_time()
            clients[name]()
            spent = time.process_time() - start
            if i >= WARMUP_ROUNDS:
                times[name].append(spent * 1000)
        truncate.execute(f"TRUNCATE {workload.table}")
    sync_median = statistics.median(times["sync copy_records_to_table"])
    print(f"client CPU per {workload.name} run ({workload.rows} rows), {rounds} rounds, ms:")
    for name, values in times.items():
        q1, q2, q3 = statistics.quantiles(values, n=4)
        print(f"  {name:40s} median {q2:6.2f}  (quartiles {q1:.2f}-{q3:.2f})  "
              f"{q2 / sync_median:.2f}x sync; fastest {min(values):.2f}")
    binary.close()
    sync.close()
    dbapi_conn.close()


if __name__ == "__main__":
    main()
