"""COPY: bulk transfer into and out of tables (part of Connection)."""
from __future__ import annotations


class CopyMixin:
    """copy_to_table(), copy_from_table(), copy_from_query(), copy_records_to_table()."""

    __slots__ = ()
