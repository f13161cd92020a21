"""The report: verdicts in plain words, figures, evidence, remedies and provenance.

``write_report(run_dir)`` (called by ``fairpair run`` at the end, and by
``fairpair report RUN``) writes three files to ``RUN/report/`` (or ``--out``):

``report.html``
    One self-contained page: styles inline, figures as SVG ``data:`` images,
    no script, no font or anything else to fetch (a Content-Security-Policy
    ``default-src 'none'; style-src 'unsafe-inline'; img-src data:`` makes
    the browser refuse any request). Every answer and label is escaped.
``report.md``
    The same content as Markdown; untrusted text is escaped inline or put in
    fenced code blocks that it cannot close.
``report.json``
    A summary for machines, schema ``fairpair.report/1``::

        {
          "schema": "fairpair.report/1",
          "fairpair_version": str, "generated_at": ISO 8601 UTC, "language": "es" | "en",
          "run_dir": str,
          "analysed": bool,                  # false when RUN/results.json is absent
          "battery": {"name": str, "sha256": str | null, "plan_sha256": str | null,
                      "plan_sha256_now": str | null,  # the plan executed
                      "plan_changed": bool,           # executed plan != registered plan
                      "plan_edits_refused": int},     # edited plans offered later and refused
          "overall": "fail" | "pass" | "inconclusive" | "insufficient design" | "incomplete run" | "none",
                                             # primary comparisons and failing answer-status ones
          "verdicts": [{
              "id", "target", "measure", "attribute", "design", "group_a", "group_b": str,
              "label_a", "label_b": str,     # the battery's group labels
              "scale": "binary" | "continuous" | "count" | "ordinal", "primary": bool,
              "verdict": "fail" | "pass" | "inconclusive",
              "estimate": float | null,      # group_a - group_b (proportion for binary)
              "ci": [low, high] | null, "margin": float | null,
              "test": str, "pvalue": float | null, "pvalue_adjusted": float | null,
              "correction": str, "n_pairs": int, "n_dropped": int,
              "sentence": str,               # the plain-words verdict in `language`
              "shown": str,                  # the verdict shown: `verdict`, or "incomplete run" / "not measured"
              "reasons": [str],              # fairpair.records.Reason values, headline first
              "reason": str,                 # the headline reason in `language` ("" without one)
              "mark": "" | "*" | "†"         # secondary / automatic answer-status comparison
          }],
          "incomplete": {"answered": int, "cases": int, "command": str} | null,
          "counts": str,                     # how many fail, pass, are inconclusive, insufficient
          "reasons": [{"kind": str, "text": str, "comparisons": [str]}],   # each reason once
          "targets": [{"name": str, "served_models": {model: answers}, "system_fingerprints": {fp: answers},
                       "cases": int, "answered": int, "failed": int, "retried": int,
                       "failure_reasons": {reason: cases}}],
          "self_judging": bool, "warnings": [str],
          "files": {"html": path, "md": path, "json": path}
        }

Sections, in order: the answer (overall verdict, the counts of verdicts, each
failing comparison with its effect and interval, a design note, each reason
once with the comparisons it covers, one box of warnings: plan changed after
registration, self-judging...); one sentence per pre-registered comparison and
the numbers table; forest plot, discordant pairs and rates/means by group;
the two-party SUB x RES heat maps and dispersion by power condition; masked
answers side by side for every failing comparison; remedies in order of
effectiveness with the commands that re-run the battery; counts, failures and
exclusions; provenance; what the test does not show.

``fairpair export RUN --format csv|parquet`` writes the answers, measurements
and results as tables (:func:`export_run`).
"""

from fairpair._lazy import lazy_getattr
from fairpair.report._catalog import verdict_sentence
from fairpair.report._data import ReportData, load_report_data
from fairpair.report._export import export_run
from fairpair.report._render import REPORT_SCHEMA, ReportModel, build_model, build_view, report_model, write_report
from fairpair.report._terminal import verdict_table

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "print_verdicts": "fairpair.report._terminal",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["write_report", "load_report_data", "ReportData", "ReportModel", "build_model", "report_model",
           "build_view", "verdict_sentence", "verdict_table",
           "export_run", "REPORT_SCHEMA"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)
