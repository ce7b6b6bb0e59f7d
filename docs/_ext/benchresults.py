"""The ``bench-results`` directive: the benchmark's latest run, embedded in a page.

``python -m bench`` writes ``results.md`` (a small, fixed subset of markdown:
headings, bullet lines, paragraphs, pipe tables, images) and PNG charts into
``bench/results/latest/``.  Sphinx cannot read markdown without a further
dependency, so this turns that subset into docutils nodes directly; table
cells become plain text nodes, so nothing in a cell (an error message, say)
can be mistaken for reStructuredText markup.

Charts are referenced where they are: Sphinx copies images from outside the
source folder like any other.  Without a run the directive renders a note,
so the site builds on a fresh checkout.

Markup::

    .. bench-results::
"""
from __future__ import annotations

import os
import re
from typing import Iterator

from docutils import nodes
from docutils.parsers.rst import Directive

_INLINE = re.compile(r'`([^`]+)`|\*\*([^*]+)\*\*')
_IMAGE = re.compile(r'!\[([^\]]*)\]\(([^)\s]+)\)')
_OVERVIEW_CHART = 'rows_per_s.png'


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


def _table(lines: list[str]) -> nodes.table:
    rows = [_split_row(line) for line in lines]
    header = rows[0]
    align = ['left'] * len(header)
    body = rows[1:]
    if body and _is_separator(body[0]):
        align = ['right' if c.endswith(':') else 'left' for c in body[0]]
        body = body[1:]
    width = len(header)

    def row_node(cells: list[str], heading: bool) -> nodes.row:
        row = nodes.row()
        for i in range(width):
            text = cells[i] if i < len(cells) else ''
            entry = nodes.entry()
            if not heading and align[i] == 'right':
                entry['classes'].append('bench-number')
            entry += nodes.paragraph('', '', *_inline(text))
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
    return table


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

    def _image(self, results_dir: str, name: str, alt: str, env) -> list[nodes.Node]:
        path = os.path.join(results_dir, name)
        if os.path.basename(name) != name or not os.path.isfile(path):
            return []
        env.note_dependency(path)
        # Relative to the page's own folder, which is how Sphinx resolves it.
        source_dir = os.path.dirname(env.doc2path(env.docname))
        uri = os.path.relpath(path, source_dir).replace(os.sep, '/')
        return [nodes.image(uri=uri, alt=alt, classes=['bench-chart'])]

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
                    para = nodes.paragraph('', '', nodes.strong('Latest run: ', 'Latest run: '),
                                           nodes.Text(run))
                    top.append(para)
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
                add(_table(payload))
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

        overview = self._image(results_dir, _OVERVIEW_CHART, 'rows/s per workload and driver', env)
        # After the run's description (the title line and the machine bullets).
        insert_at = next((i for i, n in enumerate(top) if isinstance(n, nodes.section)),
                         len(top))
        return top[:insert_at] + overview + top[insert_at:]


def setup(app):
    app.add_config_value('bench_results_dir', '', 'env')
    app.add_directive('bench-results', BenchResults)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
