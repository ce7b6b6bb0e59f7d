"""The mypgdriver benchmark suite: `python -m bench --help`.

Layout: `workloads` (what is measured), `contenders` (the names of the
drivers and scenario contenders, each table's baseline and A/A control),
`drivers/` (one module per driver), `worker` (one cell in a subprocess),
`pgbench` (the C floor), `pipeline_scenario` (100 tasks on one connection),
`pool_scenario` (simulated web requests through connection pools),
`memory` (peak RSS of streaming 1M rows through a cursor), `stats` (timings
into numbers), `runner` (the plan and its cells), `server` (the PostgreSQL
under test), `provenance` (the machine and the commit measured), `report`
(tables, JSON, charts, from result data only) and `cli` (the command line).
"""
