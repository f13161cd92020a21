"""The ``fairpair`` command line (typer + rich): one package, one module per command group.

Every command is a thin wrapper: it parses its options (declared once, in
:mod:`fairpair.cli._options`) and calls the library function of its stage. No
module outside this package imports typer or the app.

=====================  ==========================================================
module                 commands
=====================  ==========================================================
``_battery``           ``init``, ``validate``, ``plan``, ``lexicons``, ``schema``
``_cases``             ``expand``
``_run``               ``run``, ``check``, ``status``
``_measures``          ``measure``, ``label``, ``calibrate export``, ``calibrate import``, ``calibrate score``
``_analysis``          ``analyze``, ``gate``, ``compare``, ``results-schema``
``_report``            ``report``, ``export``
``_persona``           ``import-scenes``, ``reanalyze``
``_importers``         ``import-answers``, ``answers-schema``
=====================  ==========================================================

The entry point is :func:`main` (``fairpair = "fairpair.cli:main"``); it turns
every :class:`~fairpair.errors.FairpairError` and usage error into one message
and exit code 2, with no traceback.
"""

# registering the commands, in the order of the pipeline (the order of `fairpair --help`)
from fairpair.cli import _battery, _cases, _run, _measures, _analysis, _report, _persona, _importers  # noqa: F401, I001
from fairpair.cli._app import app
from fairpair.cli._main import main

__all__ = ["app", "main"]
