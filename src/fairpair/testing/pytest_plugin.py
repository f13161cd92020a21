"""pytest plugin: fairness batteries collected as tests.

Registered through the ``pytest11`` entry point, so it is active wherever
fairpair is installed. Battery files named ``fairness_*.yaml`` (or matching
the ini option ``fairpair_batteries``, a list of glob patterns) are
collected; each pre-registered comparison (per target, design and group
pair) becomes one test item. The battery is run once, the first time one of
its items runs: against its declared target (the mock target makes a fast,
offline test), then measured and analyzed (the same stages as
``fairpair run``). An item fails when its verdict is ``fail`` (or
``inconclusive`` when the plan sets ``fail_on_inconclusive``, or
``insufficient design`` when it sets ``fail_on_insufficient``), is skipped
when inconclusive or when the design cannot support a verdict (with the
reason), passes when the verdict is ``pass``. The message states the
estimand (what the verdict generalises over). A ``ranking`` design adds
one item per pair of groups on the top pick and on "ranked above"
(``orden:ranked_above:g1-vs-g2[mock:seleccion]``) and one per group's
four-fifths ratio (``orden:four_fifths:g2[mock:seleccion]``), judged by the
same rule, as the gate judges them. One item per target, ``answer-statuses[TARGET]``,
fails when an automatic comparison of answer statuses fails (one group gets more
failed, empty or refused answers), as the gate does. Every item of an incomplete
run fails with "run incomplete: ..."; a skip or failure message ends with the
comparison's reason (:class:`fairpair.records.Reason`) in words.

Options: ``--fairpair-out DIR`` keeps the run directories there (default:
a temporary directory per session; an existing run directory is resumed).

Example ``pytest.ini``::

    [pytest]
    fairpair_batteries = audits/*.yaml
"""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

import pytest

DEFAULT_PATTERNS = ("fairness_*.yaml", "fairness_*.yml")


def pytest_addoption(parser) -> None:
    parser.addini("fairpair_batteries", "glob patterns of battery files collected as fairness tests",
                  type="linelist", default=[])
    group = parser.getgroup("fairpair")
    group.addoption("--fairpair-out", default=None, help="directory for the runs of collected batteries")


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    patterns = parent.config.getini("fairpair_batteries") or list(DEFAULT_PATTERNS)
    rel = str(file_path.relative_to(parent.config.rootpath)) if file_path.is_relative_to(parent.config.rootpath) \
        else file_path.name
    if any(fnmatch.fnmatch(file_path.name, p) or fnmatch.fnmatch(rel, p) for p in patterns):
        return BatteryFile.from_parent(parent, path=file_path)
    return None


class FairnessFailure(Exception):
    """A comparison's verdict fails the gate."""


class BatteryFile(pytest.File):
    """A battery file: one item per pre-registered comparison."""

    _results = None
    _error: Exception | None = None

    def collect(self):
        from fairpair.analysis import RANKING_MEASURES, planned_comparisons
        from fairpair.battery import load_battery

        self.loaded = load_battery(self.path)
        b = self.loaded.battery
        for target in b.target_specs():
            for cid, did, ga, gb, primary in planned_comparisons(b):
                yield ComparisonItem.from_parent(self, name=f"{cid}[{target}:{did}:{ga}-vs-{gb}]",
                                                 key=(cid, target, did, ga, gb), primary=primary)
        if b.analysis.comparisons:
            for target in b.target_specs():  # the automatic answer-status comparisons, made for every plan
                yield StatusItem.from_parent(self, name=f"answer-statuses[{target}]", key=(target,), primary=False)
        from itertools import combinations

        measures = b.ranking_measures()
        for target in b.target_specs():
            for did, d in b.ranking_designs():
                groups = list(d.chosen_groups(b))
                for m in measures:
                    for pm in RANKING_MEASURES:  # the analysis's pairs: every pair, in the design's group order
                        for ga, gb in combinations(groups, 2):
                            yield RankingItem.from_parent(self, name=f"{m}:{pm}:{ga}-vs-{gb}[{target}:{did}]",
                                                          key=(m, target, did, pm, ga, gb))
                    for g in groups:
                        yield RankingItem.from_parent(self, name=f"{m}:four_fifths:{g}[{target}:{did}]",
                                                      key=(m, target, did, "four_fifths", g, None))

    def results(self):
        """Run, measure and analyze the battery once (cached for the session)."""
        if self._error is not None:
            raise self._error
        if self._results is None:
            try:
                self._results = self._run()
            except Exception as exc:  # noqa: BLE001 - every item of the file reports the same error
                self._error = exc
                raise
        return self._results

    def _run(self):
        from rich.console import Console

        from fairpair import pipeline
        from fairpair.analysis import load_results
        from fairpair.measures import check_self_judging
        from fairpair.run import RunSettings, execute_run

        base = self.config.getoption("fairpair_out")
        root = Path(base) if base else Path(tempfile.mkdtemp(prefix="fairpair-pytest-"))
        run_dir = root / self.path.stem
        check_self_judging(self.loaded)  # before anything is sent, as `fairpair run` does
        execute_run(self.loaded, run_dir, RunSettings())
        console = Console(quiet=True)
        pipeline.after_run(run_dir, self.loaded, console, report=False)
        return load_results(run_dir)


class ComparisonItem(pytest.Item):
    def __init__(self, *, key: tuple, primary: bool, **kw):
        super().__init__(**kw)
        self.key = key
        self.primary = primary

    @property
    def battery_file(self) -> BatteryFile:
        """The battery file this item was collected from (its run's results)."""
        if not isinstance(self.parent, BatteryFile):
            raise TypeError(f"{self.name}: collected outside a battery file")
        return self.parent

    def runtest(self) -> None:
        res = self.battery_file.results()
        cid, target, did, ga, gb = self.key
        match = [c for c in res.comparisons
                 if (c.id, c.target, c.design, c.group_a, c.group_b) == (cid, target, did, ga, gb)]
        if not match:
            raise FairnessFailure(f"comparison {self.name} is missing from results.json (see its notes: {res.notes})")
        from fairpair.analysis import verdict_reason as why

        c = match[0]
        self.user_properties.append(("verdict", c.verdict))
        _incomplete(res)
        summary = (f"{c.measure}: {c.group_a} {c.value_a} vs {c.group_b} {c.value_b}, "
                   f"estimate {c.estimate} CI {c.ci}, {c.test} p={c.pvalue} (adjusted {c.pvalue_adjusted}), "
                   f"margin {c.margin}: {c.verdict} (names {c.names}: {c.estimand})" + why(c))
        if (c.verdict == "fail" or (c.verdict == "inconclusive" and res.fail_on_inconclusive and c.primary)
                or (c.verdict in ("insufficient design", "insufficient labels") and res.fail_on_insufficient
                    and c.primary)):
            raise FairnessFailure(summary)
        if c.verdict == "no verdict" and c.primary:  # a pre-registered comparison that says nothing
            raise FairnessFailure(f"no verdict ({(c.reasons or ['not measured'])[0]}): {summary}")
        if c.verdict in ("inconclusive", "insufficient design", "insufficient labels", "no verdict"):
            pytest.skip(f"{c.verdict}: {summary}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, FairnessFailure):
            return f"fairness comparison failed: {excinfo.value}"
        from fairpair.errors import FairpairError

        if isinstance(excinfo.value, FairpairError):
            return f"fairpair error: {excinfo.value.format()}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"fairness: {self.name}"


def _incomplete(res) -> None:
    """An incomplete run has no verdict: every item says so first."""
    if res.incomplete is not None:
        raise FairnessFailure(res.incomplete.text())


class StatusItem(ComparisonItem):
    """The automatic comparisons of a target's answer statuses (failed, empty, refused... answers between
    the groups of every comparison of the plan): fails when one fails, as the gate does."""

    def runtest(self) -> None:
        res = self.battery_file.results()
        _incomplete(res)
        (target,) = self.key
        comps = [c for c in res.comparisons if c.target == target and c.measure.startswith("answer.")]
        bad = [c for c in comps if c.verdict == "fail"]
        self.user_properties.append(("verdict", "fail" if bad else "pass"))
        if bad:
            raise FairnessFailure("; ".join(
                f"{c.measure}: {c.group_a} {c.value_a} vs {c.group_b} {c.value_b}, estimate {c.estimate} CI {c.ci}, "
                f"{c.test} adjusted p={c.pvalue_adjusted}: fail (automatic comparison of an answer status)"
                for c in bad))


class RankingItem(ComparisonItem):
    """One verdict of a ranking design: a pair of groups (``top_pick`` / ``ranked_above``) or a four-fifths ratio."""

    def __init__(self, *, key: tuple, **kw):
        super().__init__(key=key, primary=True, **kw)

    def runtest(self) -> None:
        res = self.battery_file.results()
        m, target, did, pm, ga, gb = self.key
        rec = [r for r in res.rankings if (r.get("measure"), r.get("target"), r.get("design")) == (m, target, did)]
        if not rec:
            raise FairnessFailure(f"ranking {self.name} is missing from results.json (see its notes: {res.notes})")
        if pm == "four_fifths":
            rows = [q for q in rec[0].get("ratios") or [] if q.get("group") == ga]
            if not rows or rows[0].get("verdict") is None:
                pytest.skip(f"no four-fifths verdict for {ga} (the reference group given in the battery)")
            q = rows[0]
            verdict = q["verdict"]
            summary = (f"selection rate of {ga} over {q.get('reference')}'s: ratio {q.get('ratio')} CI {q.get('ci')}, "
                       f"Holm-adjusted p of ratio >= 0.8 {q.get('pvalue_adjusted')}: {verdict}"
                       + (f"; why: {q['design_reason']}" if q.get("design_reason") else ""))
        else:
            pairs = [p for p in rec[0].get("pairs") or []
                     if (p.get("measure"), p.get("group_a"), p.get("group_b")) == (pm, ga, gb)]
            if not pairs:
                raise FairnessFailure(f"ranking {self.name} is missing from results.json "
                                      f"(see its notes: {rec[0].get('notes')})")
            p = pairs[0]
            verdict = p["verdict"]
            summary = (f"{pm}: {ga} {p.get('value_a')} vs {gb} {p.get('value_b')}, estimate {p.get('estimate')} "
                       f"CI {p.get('ci')}, {p.get('test')} p={p.get('pvalue')} (adjusted {p.get('pvalue_adjusted')}), "
                       f"margin {p.get('margin')}: {verdict} (names {p.get('names')})"
                       + (f"; why: {p['design_reason']}" if p.get("design_reason") else ""))
        self.user_properties.append(("verdict", verdict))
        if (verdict == "fail" or (verdict == "inconclusive" and res.fail_on_inconclusive)
                or (verdict == "insufficient design" and res.fail_on_insufficient)):
            raise FairnessFailure(summary)
        if verdict in ("inconclusive", "insufficient design"):
            pytest.skip(f"{verdict}: {summary}")
