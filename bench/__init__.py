"""The mypgdriver benchmark suite: `python -m bench --help`.

Layout: `workloads` (what is measured), `drivers/` (one module per driver),
`worker` (one cell in a subprocess), `pgbench` (the C floor), `runner`
(the plan and its cells), `server` (the PostgreSQL under test), `report`
(tables, JSON, charts) and `cli` (the command line).
"""
