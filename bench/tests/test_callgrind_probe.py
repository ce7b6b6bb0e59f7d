"""The callgrind probe's parsing and table (no valgrind, no database)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench import callgrind_probe


def test_callgrind_total_reads_the_totals_line(tmp_path: Path) -> None:
    out = tmp_path / "a.out"
    out.write_text("version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfl=x\n0 5\ntotals: 123456\n")
    assert callgrind_probe.callgrind_total(out) == 123456


def test_callgrind_total_without_totals_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "a.out"
    out.write_text("events: Ir\n")
    with pytest.raises(ValueError):
        callgrind_probe.callgrind_total(out)


def test_short_name_makes_both_trees_files_compare_equal() -> None:
    old = "/tmp/checkout-old/csrc/record_type.c:record_free [/tmp/checkout-old/mypgdriver/protocol/record.so]"
    new = "csrc/record_type.c:record_free"
    assert callgrind_probe._short_name(old, "/tmp/checkout-old") == new
    assert callgrind_probe._short_name(new, "/tmp/checkout-new/") == new


def test_table_shows_medians_and_the_last_tree_against_the_first(capsys) -> None:
    old, new = Path("/a"), Path("/b")
    # results are keyed by the tree's position: the same tree may be given
    # twice (--row-factory compares two factories on one tree)
    callgrind_probe.print_table([old, new], {"batch": {0: [100.0, 102.0, 101.0], 1: [103.0, 103.0]}})
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| batch | 101 | 103 | +2.0% |"
