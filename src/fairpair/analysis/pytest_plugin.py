"""Deprecated location of fairpair's pytest plugin, now :mod:`fairpair.testing.pytest_plugin`.

A venv installed before the move still names this module in its ``pytest11`` entry point (and
``-p fairpair.analysis.pytest_plugin`` may sit in a ``pytest.ini``): pytest loads the plugin through
``pytest_plugins``, by name, so the analysis floor imports nothing above it. Reinstall fairpair
(``pip install -e .``) to register the new module directly; this one goes in a later release.
"""

pytest_plugins = ["fairpair.testing.pytest_plugin"]
