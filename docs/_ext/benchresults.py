"""The ``bench-results`` directive: the benchmark's latest run, embedded in a page.

``python -m bench`` writes ``results.md`` (a small, fixed subset of markdown:
headings, bullet lines, paragraphs, pipe tables, images) and PNG charts into
``bench/results/latest/``.  Sphinx cannot read markdown without a further
dependency, so this turns that subset into docutils nodes directly; table
cells become plain text nodes, so nothing in a cell (an error message, say)
can be mistaken for reStructuredText markup.

Charts are referenced where they are: Sphinx copies images from outside the
source folder like any other.  Each chart links to its full-size file, and
the overview chart may use more than the text column's width (the page's
CSS).  Without a run the directive renders a note, so the site builds on a
fresh checkout.

The report's tables are made for a terminal; to fit the text column, a cell
``1.7M (1.00)`` shows its ratio on a second line, and a cell ``n/a (why)``
shows ``n/a`` with the reason once under the table.  ``results.json``, when
present, says which run the numbers come from: its date, the commit it
measured (and whether the checkout had uncommitted changes), and whether it
was a quick smoke run.

Markup::

    .. bench-results::
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import datetime
from typing import Any, Iterator, Optional

from docutils import nodes
from docutils.parsers.rst import Directive

_INLINE = re.compile(r'`([^`]+)`|\*\*([^*]+)\*\*')
_IMAGE = re.compile(r'!\[([^\]]*)\]\(([^)\s]+)\)')
_OVERVIEW_CHART = 'rows_per_s.png'
# "1.7M (1.00)": a value and its ratio to the baseline.
_VALUE_AND_RATIO = re.compile(r'(\S+) (\([0-9.]+x?\))')
# "n/a (pgbench cannot express this workload)": a missing value and why.
_NOT_AVAILABLE = re.compile(r'n/a \((.+)\)')


def _inline(text: str) -> list[nodes.Node]:
    """Text with ``code`` and **bold** spans, the only inline markup the report uses."""
    out: list[nodes.Node] = []
    pos = 0
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            out.append(nodes.Text(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(nodes.literal(m.group(1), m.group(1)))
        else:
            out.append(nodes.strong(m.group(2), m.group(2)))
        pos = m.end()
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


def _split_row(line: str) -> list[str]:
    cells = line.strip()
    if cells.startswith('|'):
        cells = cells[1:]
    if cells.endswith('|'):
        cells = cells[:-1]
    return [c.strip() for c in cells.split('|')]


def _is_separator(cells: list[str]) -> bool:
    return all(re.fullmatch(r':?-{3,}:?', c) for c in cells)


def _cell(text: str, heading: bool) -> nodes.paragraph:
    """A table cell's paragraph; a value with its ratio puts the ratio on a line of its own."""
    match = None if heading else _VALUE_AND_RATIO.fullmatch(text)
    if match is None:
        return nodes.paragraph('', '', *_inline(text))
    return nodes.paragraph('', '', nodes.Text(match.group(1)),
                           nodes.inline(match.group(2), match.group(2), classes=['bench-ratio']))


def _table(lines: list[str]) -> list[nodes.Node]:
    """The table, then a note giving once each reason for an ``n/a`` cell."""
    rows = [_split_row(line) for line in lines]
    header = rows[0]
    align = ['left'] * len(header)
    body = rows[1:]
    if body and _is_separator(body[0]):
        align = ['right' if c.endswith(':') else 'left' for c in body[0]]
        body = body[1:]
    width = len(header)
    # Why cells are n/a, each reason once, in order of appearance.
    missing: dict[str, None] = {}

    def row_node(cells: list[str], heading: bool) -> nodes.row:
        row = nodes.row()
        for i in range(width):
            text = cells[i] if i < len(cells) else ''
            not_available = None if heading else _NOT_AVAILABLE.fullmatch(text)
            if not_available:
                text = 'n/a'
                missing[not_available.group(1)] = None
            entry = nodes.entry()
            if not heading and align[i] == 'right':
                entry['classes'].append('bench-number')
            entry += _cell(text, heading)
            row += entry
        return row

    table = nodes.table(classes=['bench-table'])
    group = nodes.tgroup(cols=width)
    table += group
    for _ in range(width):
        group += nodes.colspec(colwidth=1)
    thead = nodes.thead()
    thead += row_node(header, True)
    group += thead
    tbody = nodes.tbody()
    for cells in body:
        tbody += row_node(cells, False)
    group += tbody
    notes: list[nodes.Node] = [
        nodes.paragraph('', f'n/a: {reason}.', classes=['bench-table-note'])
        for reason in missing]
    return [table, *notes]


def _blocks(text: str) -> Iterator[tuple[str, object]]:
    """(kind, payload) for each block of the report: heading, bullets, table, image, para."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        heading = re.match(r'(#{1,6})\s+(.*)', stripped)
        if heading:
            yield 'heading', (len(heading.group(1)), heading.group(2).strip())
            i += 1
            continue
        if stripped.startswith('|'):
            block = []
            while i < len(lines) and lines[i].strip().startswith('|'):
                block.append(lines[i])
                i += 1
            yield 'table', block
            continue
        if stripped.startswith(('- ', '* ')):
            items = []
            while i < len(lines) and lines[i].strip().startswith(('- ', '* ')):
                items.append(lines[i].strip()[2:])
                i += 1
            yield 'bullets', items
            continue
        image = _IMAGE.fullmatch(stripped)
        if image:
            yield 'image', (image.group(1), image.group(2))
            i += 1
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not re.match(
                r'(#{1,6}\s|\||- |\* |!\[)', lines[i].strip()):
            para.append(lines[i].strip())
            i += 1
        yield 'para', ' '.join(para)


def _read_results(results_dir: str, env) -> dict[str, Any]:
    """results.json of the run, or {} when it is missing or unreadable."""
    path = os.path.join(results_dir, 'results.json')
    try:
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    env.note_dependency(path)
    return data if isinstance(data, dict) else {}


def _recorded(data: dict[str, Any], key: str) -> Any:
    """A run attribute, at the top of results.json or in its machine/settings part."""
    for part in (data, data.get('machine'), data.get('settings')):
        if isinstance(part, dict) and part.get(key) is not None:
            return part[key]
    return None


def _commits_since(commit: str, repo_dir: str) -> Optional[int]:
    """How many commits the documented checkout has on top of `commit` (None: unknown)."""
    try:
        done = subprocess.run(['git', 'rev-list', '--count', f'{commit}..HEAD'], cwd=repo_dir,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        return None
    return int(done.stdout.strip())


def _when(started: Any, fallback: str) -> str:
    try:
        moment = datetime.fromisoformat(str(started))
    except ValueError:
        return fallback
    return moment.strftime('%Y-%m-%d %H:%M') + (' UTC' if moment.utcoffset() is not None
                                                and not moment.utcoffset() else '')


def _run_description(data: dict[str, Any], title_run: str, docs_dir: str) -> list[nodes.Node]:
    """The 'Latest run' line: when, which commit, and whether it was a full run."""
    para = nodes.paragraph('', '', nodes.strong('Latest run: ', 'Latest run: '),
                           nodes.Text(_when(data.get('started'), title_run)))
    commit = _recorded(data, 'commit')
    if commit:
        para += nodes.Text(', commit ')
        para += nodes.literal(str(commit)[:12], str(commit)[:12])
        if _recorded(data, 'dirty'):
            para += nodes.Text(' with uncommitted changes')
        since = _commits_since(str(commit), docs_dir)
        if since:
            para += nodes.Text(f' ({since} commit{"s" if since != 1 else ""} before the '
                               f'source of these pages)')
    elif data:
        para += nodes.Text('; the run did not record which commit it measured')
    para += nodes.Text('.')
    out: list[nodes.Node] = [para]
    if _recorded(data, 'quick'):
        warning = nodes.paragraph('', 'This is a quick smoke run (short cells, one round): '
                                      'its ratios are within noise. Only a full run '
                                      'measures the drivers.')
        out.append(nodes.warning('', warning))
    return out


class BenchResults(Directive):
    """Render ``results.md`` and the charts of the latest benchmark run."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        results_dir = env.config.bench_results_dir
        report = os.path.join(results_dir, 'results.md')
        if not os.path.isfile(report):
            para = nodes.paragraph('', 'No benchmark results have been recorded yet. Run ')
            para += nodes.literal('./dev.sh bench', './dev.sh bench')
            para += nodes.Text(' from the repository root: it saves its tables and charts '
                               'in ')
            para += nodes.literal('bench/results/latest/', 'bench/results/latest/')
            para += nodes.Text(', and the next build of these pages shows them here.')
            return [nodes.note('', para)]
        env.note_dependency(report)
        with open(report, encoding='utf-8') as f:
            text = f.read()
        return self._render(text, results_dir, env)

    def _image(self, results_dir: str, name: str, alt: str, env, *,
               wide: bool = False) -> list[nodes.Node]:
        path = os.path.join(results_dir, name)
        if os.path.basename(name) != name or not os.path.isfile(path):
            return []
        env.note_dependency(path)
        # Relative to the page's own folder, which is how Sphinx resolves it.
        source_dir = os.path.dirname(env.doc2path(env.docname))
        uri = os.path.relpath(path, source_dir).replace(os.sep, '/')
        classes = ['bench-chart', 'bench-chart-wide'] if wide else ['bench-chart']
        # A width makes Sphinx's HTML builder wrap the image in a link to the
        # full-size file (html_scaled_image_link): the charts are drawn for
        # reading at full size, larger than the text column.
        return [nodes.image(uri=uri, alt=alt, classes=classes, width='100%')]

    def _section(self, title: str) -> nodes.section:
        section = nodes.section()
        section += nodes.title(title, '', *_inline(title))
        section['names'].append(nodes.fully_normalize_name(title))
        self.state.document.note_implicit_target(section, section)
        return section

    def _render(self, text: str, results_dir: str, env) -> list[nodes.Node]:
        top: list[nodes.Node] = []
        # Sections opened by '##' and '###' headings; '#' is the report's title.
        stack: list[tuple[int, nodes.Element]] = []
        skipping = False

        def add(node: nodes.Node) -> None:
            if stack:
                stack[-1][1].append(node)
            else:
                top.append(node)

        for kind, payload in _blocks(text):
            if kind == 'heading':
                level, title = payload
                if level == 1:
                    run = title.split(',', 1)[1].strip() if ',' in title else title
                    top.extend(_run_description(_read_results(results_dir, env), run,
                                                env.srcdir))
                    continue
                # The report ends with a 'Charts' section holding the overview
                # chart, which is shown near the top instead.
                skipping = title.lower() == 'charts'
                if skipping:
                    continue
                while stack and stack[-1][0] >= level:
                    stack.pop()
                section = self._section(title)
                add(section)
                stack.append((level, section))
                if level >= 3:
                    for node in self._image(results_dir, f'rows_per_s_{title}.png',
                                            f'rows/s for {title}', env):
                        add(node)
                continue
            if skipping:
                continue
            if kind == 'table':
                for node in _table(payload):
                    add(node)
            elif kind == 'bullets':
                bullets = nodes.bullet_list()
                for item in payload:
                    bullets += nodes.list_item('', nodes.paragraph('', '', *_inline(item)))
                add(bullets)
            elif kind == 'image':
                alt, name = payload
                for node in self._image(results_dir, name, alt, env):
                    add(node)
            else:
                add(nodes.paragraph('', '', *_inline(payload)))

        overview = self._image(results_dir, _OVERVIEW_CHART, 'rows/s per workload and driver',
                               env, wide=True)
        # After the run's description (the title line and the machine bullets).
        insert_at = next((i for i, n in enumerate(top) if isinstance(n, nodes.section)),
                         len(top))
        return top[:insert_at] + overview + top[insert_at:]


def setup(app):
    app.add_config_value('bench_results_dir', '', 'env')
    app.add_directive('bench-results', BenchResults)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
