"""Issue 24: where the client CPU of one sync-prototype query goes.

    .venv/bin/python -m bench.sync_prototype_breakdown [--n 20000] [--rounds 7] [--profile]

For ``SELECT 1+1`` (cached statement), per query:

* ``socket floor``: the same bytes the protocol sends, sendall() + recv()
  on the raw socket until ReadyForQuery: the syscalls alone.
* ``driver, no I/O``: SyncGlue.run(conn.fetchval(...)) with the transport's
  write a no-op and the answer fed from memory: coroutines, Session,
  protocol and codecs, no syscalls.
* ``bare protocol, no I/O``: proto.bind_execute() + data_received(), no
  coroutine, no Session: the state machine's share.
* ``full``: the prototype as users would call it.

With --profile, cProfile of the no-I/O driver loop (function shares).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

from mypgdriver.protocol.protocol import WANT_ROWS
from mypgdriver.sync import _prototype as sync
from tools.pgcluster import PgCluster

Q1 = 'SELECT 1+1'


def measure(fn, n, rounds):
    out = []
    for _ in range(rounds):
        c0 = time.process_time()
        fn(n)
        out.append((time.process_time() - c0) / n * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=20000)
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--profile', action='store_true')
    args = ap.parse_args()
    with PgCluster() as pg:
        conn = sync.connect(pg.dsn())
        for _ in range(100):
            conn.fetchval(Q1)
        glue = conn._glue
        transport = glue.transport
        proto = glue.protocol
        session = conn._aconn._session
        sock = transport.sock

        # Record one exchange.
        sent: list = []
        received: list = []
        real_write, real_feed = transport.write, proto.data_received
        transport.write = lambda data: (sent.append(bytes(data)), real_write(data))
        proto.data_received = lambda data: (received.append(bytes(data)), real_feed(data))
        conn.fetchval(Q1)
        del transport.write
        del proto.data_received
        out, answer = b''.join(sent), b''.join(received)
        assert answer.endswith(b'Z\x00\x00\x00\x05I'), answer
        print(f'one query: {len(out)} bytes out in {len(sent)} write(s), {len(answer)} bytes in '
              f'{len(received)} read(s)')

        def socket_floor(n):
            sendall, recv = sock.sendall, sock.recv
            for _ in range(n):
                sendall(out)
                data = recv(sync.READ_SIZE)
                while not data.endswith(b'Z\x00\x00\x00\x05I'):
                    data += recv(sync.READ_SIZE)

        def full(n):
            f = conn.fetchval
            for _ in range(n):
                f(Q1)

        class Offline:
            # Stands in for the socket: writes vanish, the recorded answer arrives.
            def __enter__(self):
                transport.write = lambda data: None
                glue.wait_for = self.wait_for
                return self

            def wait_for(self, fut):
                proto.data_received(answer)

            def __exit__(self, *exc):
                del transport.write
                del glue.wait_for

        def driver_offline(n):
            with Offline():
                f = conn.fetchval
                for _ in range(n):
                    f(Q1)

        state = session.statements.cache.get(Q1)
        record_class = session.record_class

        def bare_protocol(n):
            with Offline():
                be, feed = proto.bind_execute, proto.data_received
                for _ in range(n):
                    fut = be(state, (), 1, None, WANT_ROWS, record_class, True)
                    feed(answer)
                    fut.result()

        def coroutine_only(n):
            # A coroutine awaiting a Future and being sent to: the driving overhead.
            create = glue.create_future

            async def call():
                return await fut

            for _ in range(n):
                fut = create()
                coro = call()
                coro.send(None)
                fut.set_result(1)
                try:
                    coro.send(None)
                except StopIteration:
                    pass

        results = {}
        parts = [('socket floor (sendall+recv of the same bytes)', socket_floor),
                 ('full prototype fetchval', full),
                 ('driver + Session + protocol, no I/O', driver_offline),
                 ('bare protocol bind_execute + data_received, no I/O', bare_protocol),
                 ('Future + coroutine send/yield/send only', coroutine_only)]
        for name, fn in parts:
            fn(200)
            results[name] = []
        for _ in range(args.rounds):
            for name, fn in parts:
                results[name].extend(measure(fn, args.n, 1))
        print(f'{"part":55} {"CPU us/query: median [min..max]":>34}')
        for name, vals in results.items():
            print(f'{name:55} {statistics.median(vals):8.2f} [{min(vals):6.2f}..{max(vals):6.2f}]')
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            driver_offline(args.n)
            prof.disable()
            pstats.Stats(prof).sort_stats('tottime').print_stats(14)
        conn.close()


if __name__ == '__main__':
    main()
