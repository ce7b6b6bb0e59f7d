"""The mypgdriver benchmark suite: `python -m bench --help`.

Layout: `workloads` (what is measured), `drivers/` (one module per driver),
`worker` (one cell in a subprocess), `pgbench` (the C floor),
`pool_scenario` (simulated web requests through connection pools),
`memory` (peak RSS of streaming 1M rows through a cursor), `runner`
(the plan and its cells), `server` (the PostgreSQL under test), `report`
(tables, JSON, charts) and `cli` (the command line).
"""
