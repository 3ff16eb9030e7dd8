# Sphinx configuration of the collection's docsite, as `antsibull-docs sphinx-init --use-current
# --squash-hierarchy rdmaops.roce` writes it, with two changes: the guides are Markdown
# (myst_parser reads docs/*.md and docs/how-to/*.md as they ship), and no intersphinx inventory
# is fetched (the docs tier builds offline): the few labels of the Ansible docsite that
# antsibull-docs' pages refer to resolve to their published pages below, any other unknown
# label stays a warning (an error in the docs tier). Built by scripts/build-docsite.py.

from docutils import nodes

project = 'rdmaops.roce'
copyright = 'rdmaops developers'
title = 'rdmaops.roce'
html_short_title = 'rdmaops.roce'

extensions = ['sphinx.ext.autodoc', 'sphinx_antsibull_ext', 'myst_parser']

source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False

display_version = False

html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

# Anchors for the guides' headings, so that `page.md#a-heading` links resolve (and are checked).
myst_heading_anchors = 4
myst_enable_extensions = ['colon_fence']
# Mermaid diagrams stay as code blocks in the docsite (GitHub draws them).
suppress_warnings = ['misc.highlighting_failure']

default_role = 'any'

nitpicky = True


ANSIBLE_DOCS = 'https://docs.ansible.com/projects/ansible/devel/'
ANSIBLE_LABELS = {
    'common_return_values': 'reference_appendices/common_return_values.html',
    'action_plugins': 'plugins/action.html',
    'ansible_configuration_settings': 'reference_appendices/config.html',
}
BUILTIN = 'ansible_collections.ansible.builtin.'


def _ansible_docsite(app, env, node, contnode):
    """A reference into the Ansible docsite (what its intersphinx inventory would resolve)."""
    if node.get('reftype') != 'ref':
        return None
    target = node.get('reftarget', '')
    if target in ANSIBLE_LABELS:
        uri = ANSIBLE_DOCS + ANSIBLE_LABELS[target]
    elif target.startswith(BUILTIN) and target.endswith('_module'):
        uri = ANSIBLE_DOCS + 'collections/ansible/builtin/%s_module.html' % target[len(BUILTIN):-len('_module')]
    else:
        return None
    ref = nodes.reference('', '', internal=False, refuri=uri)
    ref.append(contnode)
    return ref


def setup(app):
    app.connect('missing-reference', _ansible_docsite)
