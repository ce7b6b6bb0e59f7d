"""Pipeline mode, typed: the results of ``with conn.pipeline() as p:`` (mypgdriver.sync).

Type-checked by tools/check_types.sh (mypy --strict and pyright strict, as
every file of tests/typing/); it also runs::

    python tests/typing/pipeline_app.py postgresql://user@localhost/db
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import mypgdriver.sync
from mypgdriver.exceptions import PipelineAborted, UniqueViolationError
from mypgdriver.rows import dict_row
from mypgdriver.sync import Record
from mypgdriver.sync.pipeline import Pipeline, PipelineResult


def batch(p: Pipeline, n: int) -> list[PipelineResult[Any]]:
    """`n` values queued at once."""
    return [p.fetchval('SELECT $1::int * 2', i) for i in range(n)]


def main(dsn: str) -> None:
    with mypgdriver.sync.connect(dsn) as conn:
        conn.execute('CREATE TEMPORARY TABLE t (id int PRIMARY KEY)')
        with conn.pipeline() as p:
            tag: PipelineResult[str] = p.execute('INSERT INTO t VALUES ($1)', 1)
            rows: PipelineResult[list[Record]] = p.fetch('SELECT id FROM t')
            row: PipelineResult[Optional[dict[str, Any]]] = p.fetchrow(
                'SELECT id FROM t', row_factory=dict_row)
            values = batch(p, 3)
        status: str = tag.result()
        first: Optional[dict[str, Any]] = row.result()
        print(status, [r['id'] for r in rows.result()], first, [v.result() for v in values])
        skipped: Optional[PipelineResult[Any]] = None
        try:
            with conn.pipeline() as p:
                p.execute('INSERT INTO t VALUES ($1)', 1)
                skipped = p.fetchval('SELECT 1')
        except UniqueViolationError as error:
            print('refused:', error.constraint_name)
        assert skipped is not None
        try:
            skipped.result()
        except PipelineAborted as aborted:
            print('skipped:', aborted)
        done: bool = skipped.done()
        print(done)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'postgresql:///postgres')
