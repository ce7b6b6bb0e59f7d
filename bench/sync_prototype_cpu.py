"""Issue 24: client CPU per query of the sync prototype against the asyncio API and psycopg.

    .venv/bin/python -m bench.sync_prototype_cpu [--rounds 5] [--n 20000] [--n-rows 200]

One throwaway server, one process; each contender runs N calls per round,
contenders interleaved round by round; CPU is time.process_time() (this
process only: the server's CPU is not counted).  "A/A" contenders are the
same code on a second connection: the spread between them is the noise.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import mypgdriver
from mypgdriver.sync import _prototype as sync
from tools.pgcluster import PgCluster

Q1 = 'SELECT 1+1'
QT = 'SELECT * FROM pg_type'


def sync_contender(dsn):
    conn = sync.connect(dsn)

    def one(n):
        f = conn.fetchval
        for _ in range(n):
            f(Q1)

    def rows(n):
        f = conn.fetch
        total = 0
        for _ in range(n):
            total += len(f(QT))
        return total
    return one, rows, conn.close


def sync_direct_contender(dsn):
    # The Session's coroutine without Connection.fetchval's own frame.
    conn = sync.connect(dsn)
    execute = conn._aconn._session.execute
    run = conn._glue.run

    def one(n):
        f = conn.fetchval_direct
        for _ in range(n):
            f(Q1)

    def rows(n):
        total = 0
        for _ in range(n):
            total += len(run(execute(QT, (), 0, None, False, None)))
        return total
    return one, rows, conn.close


def asyncio_contender(dsn, loop):
    conn = loop.run_until_complete(mypgdriver.connect(dsn, ssl=False))

    async def loop_one(n):
        f = conn.fetchval
        for _ in range(n):
            await f(Q1)

    async def loop_rows(n):
        f = conn.fetch
        total = 0
        for _ in range(n):
            total += len(await f(QT))
        return total
    return (lambda n: loop.run_until_complete(loop_one(n)),
            lambda n: loop.run_until_complete(loop_rows(n)),
            lambda: loop.run_until_complete(conn.close()))


def psycopg2_contender(dsn):
    import psycopg2
    conn = psycopg2.connect(dsn, sslmode='disable')
    conn.autocommit = True
    cur = conn.cursor()

    def one(n):
        ex, fo = cur.execute, cur.fetchone
        for _ in range(n):
            ex(Q1)
            fo()[0]

    def rows(n):
        total = 0
        for _ in range(n):
            cur.execute(QT)
            total += len(cur.fetchall())
        return total
    return one, rows, conn.close


def psycopg3_contender(dsn):
    import psycopg
    conn = psycopg.connect(dsn, sslmode='disable', autocommit=True)
    cur = conn.cursor()

    def one(n):
        for _ in range(n):
            cur.execute(Q1)
            cur.fetchone()[0]

    def rows(n):
        total = 0
        for _ in range(n):
            cur.execute(QT)
            total += len(cur.fetchall())
        return total
    return one, rows, conn.close


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--n', type=int, default=20000)
    ap.add_argument('--n-rows', type=int, default=200)
    ap.add_argument('--only', default='')
    args = ap.parse_args()
    with PgCluster() as pg:
        dsn = pg.dsn()
        default_loop = asyncio.new_event_loop()
        contenders = {
            'sync prototype': sync_contender(dsn),
            'sync prototype (A/A)': sync_contender(dsn),
            'sync prototype, no Connection frame': sync_direct_contender(dsn),
            'asyncio default loop': asyncio_contender(dsn, default_loop),
        }
        try:
            import uvloop
            uv = uvloop.new_event_loop()
            contenders['asyncio uvloop'] = asyncio_contender(dsn, uv)
            contenders['asyncio uvloop (A/A)'] = asyncio_contender(dsn, uv)
        except ImportError:
            pass
        contenders['psycopg2 2.9'] = psycopg2_contender(dsn)
        contenders['psycopg 3'] = psycopg3_contender(dsn)
        contenders['psycopg2 2.9 (A/A)'] = psycopg2_contender(dsn)
        if args.only:
            contenders = {k: v for k, v in contenders.items() if args.only in k}
        # Warm up: statement caches, codecs, introspection.
        for one, rows, _ in contenders.values():
            one(200)
            rows(3)
        cpu1 = {k: [] for k in contenders}
        wall1 = {k: [] for k in contenders}
        rate = {k: [] for k in contenders}
        for _ in range(args.rounds):
            for name, (one, rows, _) in contenders.items():
                c0, w0 = time.process_time(), time.perf_counter()
                one(args.n)
                c1, w1 = time.process_time(), time.perf_counter()
                cpu1[name].append((c1 - c0) / args.n * 1e6)
                wall1[name].append((w1 - w0) / args.n * 1e6)
                c0 = time.process_time()
                total = rows(args.n_rows)
                c1 = time.process_time()
                rate[name].append(total / (c1 - c0))
        print(f'rounds={args.rounds} n={args.n} n_rows={args.n_rows} (rows per fetch: '
              f'{total // args.n_rows})')
        print(f'{"contender":38} {"CPU us/query SELECT 1+1":>30} {"wall us":>8} '
              f'{"pg_type rows/CPU-s":>30}')
        for name in contenders:
            c, w, t = cpu1[name], wall1[name], rate[name]
            print(f'{name:38} {statistics.median(c):8.2f} [{min(c):6.2f}..{max(c):6.2f}] '
                  f'{statistics.median(w):8.2f} '
                  f'{statistics.median(t) / 1e3:9.0f}k [{min(t) / 1e3:5.0f}k..{max(t) / 1e3:5.0f}k]')
        for _, _, close in contenders.values():
            close()


if __name__ == '__main__':
    main()
