"""Resolve short cross-references in docstrings to the one object they can mean.

Docstrings say :meth:`Connection.reset` or :class:`PreparedStatement`, which
reads well in the code, while the reference documents those objects under
their public names (``mypgdriver.Connection.reset``,
``mypgdriver.prepared.PreparedStatement``).  Sphinx's exact lookup misses
such references and leaves them as plain text.  This handler looks the name
up as a suffix of the documented Python objects and links it when exactly
one object matches; an ambiguous or unknown name stays unlinked, as before.
"""
from __future__ import annotations

from sphinx.util.nodes import make_refnode

# Role -> object types it may point at (as Sphinx's Python domain names them).
_ROLE_TYPES = {
    'class': {'class', 'exception'},
    'exc': {'exception', 'class'},
    'meth': {'method', 'classmethod', 'staticmethod', 'property'},
    'func': {'function'},
    'attr': {'attribute', 'property'},
    'obj': None,
}


def _resolve(app, env, node, contnode):
    if node.get('refdomain') != 'py':
        return None
    wanted = _ROLE_TYPES.get(node.get('reftype'), set())
    if wanted == set():
        return None
    target = node.get('reftarget', '').lstrip('.~')
    if not target:
        return None
    suffix = '.' + target
    domain = env.get_domain('py')
    # An object documented under its public name is also registered under
    # the name of the module that defines it (an alias): count it once.
    matches = {(obj.docname, obj.node_id): (name, obj) for name, obj in domain.objects.items()
               if name.endswith(suffix) and (wanted is None or obj.objtype in wanted)}
    if len(matches) != 1:
        return None
    name, obj = next(iter(matches.values()))
    return make_refnode(app.builder, node['refdoc'], obj.docname, obj.node_id, contnode,
                        name)


def setup(app):
    app.connect('missing-reference', _resolve)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
