"""The report's message catalogue (Spanish and English) and number formats.

Every word a report shows that fairpair wrote itself comes from
:data:`MESSAGES`; nothing is machine-translated. A language missing a key
falls back to English. Numbers follow each language's convention: Spanish
uses the decimal comma and a (non-breaking) space before ``%``
(RAE/ASALE, *Ortografía de la lengua española*, 2010, section 8.2.3.1 and
the Diccionario panhispánico de dudas, "porcentaje"); English uses the point
and ``71.2%``.

:func:`verdict_sentence` turns one comparison of ``results.json`` into the
plain-words sentence shown first in every report, e.g.

    Users with Arabic names were offered a refund 5.2 points less often than
    users with Spanish names (66.0% vs 71.2%; 95% CI 1.9 to 8.4; McNemar
    p = 0.004, Holm-adjusted 0.02): beyond the 3-point margin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from fairpair.records import ComparisonResult

__all__ = ["LANGUAGES", "MESSAGES", "msg", "fmt_num", "fmt_pct", "fmt_p", "verdict_sentence",
           "verdict_word", "Phrase", "test_name", "group_subject", "difference"]

LANGUAGES = ("es", "en")
NBSP = "\u00a0"

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "title": "Counterfactual audit: {battery}",
        "title.ranking": "Ranking audit: {battery}",
        "summary_intro.ranking": ("Each answer ranks the candidates of one request, one per group; the verdicts are "
                                  "the four-fifths ratio of every group's selection rate and the top-pick and "
                                  "ranked-above comparisons of every pair of groups (under “Ranking and "
                                  "selection”)."),
        "ranking.fails": "{target}: {what}",
        "label.target": "{target}: {label}",
        "ranking.fails.ratios": "{n} four-fifths ratio(s)",
        "ranking.fails.pairs": "{n} pairwise comparison(s)",
        "lang": "en",
        "summary": "Verdicts",
        "summary_intro": ("Each pre-registered comparison pairs answers that differ only in the signal of the "
                          "attribute (same scenario, same repetition, same random seed)."),
        "verdict.fail": "FAIL",
        "verdict.pass": "PASS",
        "verdict.inconclusive": "INCONCLUSIVE",
        "verdict.insufficient design": "INSUFFICIENT DESIGN",
        "verdict.insufficient labels": "INSUFFICIENT LABELS",
        "verdict.none": "NOT ANALYSED",
        "verdict.no verdict": "NO VERDICT",
        "verdict.incomplete run": "RUN INCOMPLETE",
        "verdict.not measured": "NOT MEASURED",
        "overall.incomplete run": "The run is incomplete: no verdict until every case has an outcome.",
        "overall.fail.named": "Fails: {names}.",
        "overall.in_scenarios": "(by template, in {where})",
        "reason.incomplete run": "run incomplete",
        "reason.not measured": "not measured",
        "reason.insufficient design": "insufficient design",
        "reason.heterogeneous average": "heterogeneous average",
        "reason.insufficient labels": "insufficient labels",
        "reason.unreliable judge": "unreliable judge",
        "reason.interval": "inconclusive",
        "reason.adjusted p against zero": "inconclusive",
        "reason.adjusted p against the margin": "inconclusive",
        "reason.covers": "{kind}: {why} ({which})",
        "reason.all": "all {n} comparisons",
        "mark.secondary": "* secondary comparison: not in the family the plan's correction and the gate judge",
        "mark.status": ("† automatic comparison of an answer status (failed, empty, refused...) between the groups: "
                        "a fail fails the gate unless --ignore-status"),
        "mark.status.none": ("† no {statuses} answer in either group: {pairs} ({n} automatic comparisons, "
                             "inconclusive without a margin; each interval in results.json)"),
        "list.nor": "{rest} or {last}",  # "no failed, empty or refused answer"
        "status.adj.failed": "failed",
        "status.adj.filtered": "filtered",
        "status.adj.empty": "empty",
        "status.adj.refused": "refused",
        "status.adj.loop": "looping",
        "status.adj.out_of_role": "out-of-role",
        "status.adj.truncated": "truncated",
        "status.adj.wrong_language": "wrong-language",
        "status.plural.failed": "failed",
        "status.plural.filtered": "filtered",
        "status.plural.empty": "empty",
        "status.plural.refused": "refused",
        "status.plural.loop": "looping",
        "status.plural.out_of_role": "out-of-role",
        "status.plural.truncated": "truncated",
        "status.plural.wrong_language": "wrong-language",
        "counts.line": "{fail} fail, {pass_} pass, {inconclusive} inconclusive, {insufficient} insufficient design",
        "counts.more": "{n} more without a verdict ({what})",
        "design.note": "Design: {templates} template(s), {names}.",
        "design.names.random": "names random (the verdicts generalise to other names of the groups)",
        "design.names.fixed": "names fixed (the verdicts hold for these names)",
        "warnings.title": "Warnings",
        "reasons.title": "Why some comparisons have no verdict or are inconclusive",
        "failing.title": "Failing comparisons",
        "verbose.hint": "each comparison in a sentence: fairpair report {run} --verbose",
        "overall.insufficient design": ("No comparison fails, but the design cannot support a verdict for at "
                                        "least one (see why next to it)."),
        "clause.insufficient design": "no verdict: the design cannot support one ({reason})",
        "clause.insufficient design.said": "no verdict: the design cannot support one (why: under the verdicts)",
        "clause.incomplete run": "no verdict until the run is complete (see the headline)",
        "clause.not measured": "no verdict: not measured (why: under the verdicts)",
        "clause.insufficient labels": "no verdict: too few human labels to correct the judge (why: under the verdicts)",
        "estimand.random": "This verdict generalises to other names of these groups and other scenarios like these.",
        "estimand.fixed": ("This verdict holds for these names, in scenarios like these (not for other names of "
                           "the groups)."),
        "asked.random": ("The plan asked for a verdict that generalises to other names of these groups and other "
                         "scenarios like these."),
        "asked.fixed": "The plan asked for a verdict about these names, in scenarios like these.",
        "estimand.random.these": ("This verdict holds for these scenarios (these templates, not others) and "
                                  "generalises to other names of these groups."),
        "estimand.fixed.these": "This verdict holds for these names in these scenarios (these templates) only.",
        "bytemplate.scenario": "In scenario `{template}`: {sentence}",
        "bytemplate.claim": ("By template: the verdict is these scenarios' own (each scenario's p-value adjusted "
                             "within the scenario family, {correction}); the claim is about these scenarios (these "
                             "templates), one by one, not about the average over them ({average}), which is not "
                             "its evidence."),
        "asked.random.these": ("The plan asked for a verdict about these scenarios (these templates) that "
                               "generalises to other names of these groups."),
        "asked.fixed.these": "The plan asked for a verdict about these names in these scenarios (these templates).",
        "overall.fail": "At least one pre-registered comparison fails.",
        "overall.fail.status": ("No pre-registered comparison fails, but one group gets more unusable answers "
                                "(failed, empty, refused...: an automatic comparison, †)."),
        "overall.pass": "Every pre-registered comparison passes.",
        "overall.inconclusive": "No comparison fails, but at least one is inconclusive.",
        "overall.none": "There are no pre-registered comparisons to judge.",
        "not_analysed": ("The analysis has not run for this run directory (there is no results.json): this "
                         "report shows only what was collected. Run `fairpair analyze {run}` and then "
                         "`fairpair report {run}`."),
        "clause.fail": "beyond the {margin} margin",
        "clause.pass": "within the {margin} margin",
        "clause.inconclusive": ("inconclusive, since the interval does not settle whether it is within the "
                                "{margin} margin"),
        "clause.fail.nomargin": "a significant difference (no margin was pre-registered)",
        "clause.pass.nomargin": "no significant difference (no margin was pre-registered)",
        "clause.inconclusive.nomargin": "inconclusive (no margin was pre-registered)",
        "clause.inconclusive.why": "inconclusive: {why}",
        "margin.points": "{m}-point",
        "margin.units": "±{m}",
        "ci": "{level}% CI {lo} to {hi}",
        "vs": "{a} vs {b}",
        "adjusted": "{method}-adjusted {p}",
        "subject.name": "users with {label}",
        "subject.group": "users in the group “{label}”",
        "generic.binary": "{Subj_a}: “{m}” {diff} points {dir} often than for {subj_b}",
        "generic.binary.dir": "less|more",
        "generic.continuous": "{Subj_a}: {m} {diff} {dir} on average than for {subj_b}",
        "generic.continuous.dir": "lower|higher",
        "same": "{Subj_a}: “{m}” the same as for {subj_b}",
        "col.comparison": "Comparison",
        "col.target": "Target",
        "col.measure": "Measure",
        "col.groups": "Groups (A vs B)",
        "col.estimate": "Difference A − B",
        "col.ci": "CI",
        "col.p": "p (adjusted)",
        "col.pairs": "Pairs",
        "col.verdict": "Verdict",
        "col.test": "Test",
        "plots": "Differences and rates",
        "scenarios": "Where is it? The difference scenario by scenario",
        "scenarios.intro": ("Each comparison's difference in every scenario (template) on its own, with its interval "
                            "and a verdict; the scenario-level verdicts form a second family (Holm over the "
                            "comparison's scenarios) unless the plan asked for them (`by: template`). A scenario "
                            "marked * stands out from the others (generalized ESD test); then an average over "
                            "scenarios like these cannot pass."),
        "scenarios.average": "average over these scenarios",
        "scenarios.alt": "Forest plot by scenario for {title}: {rows}",
        "scenarios.fails": "fails in {where}",
        "scenarios.elsewhere": "not shown elsewhere",
        "scenarios.every": "in every scenario",
        "scenarios.none": "no scenario fails on its own",
        "scenarios.few": ("no scenario-level verdict: too few pairs per scenario to estimate a scenario's own "
                          "uncertainty"),
        "scenarios.spread": ("template x group share of the variance {share} ({level}% CI {lo} to {hi}); outlying "
                             "scenarios: {outliers}"),
        "scenarios.no_outliers": "none",
        "scenarios.no_test": "not tested (fewer than 5 scenarios)",
        "scenarios.guard": ("the average over scenarios like these cannot pass: the difference is uneven over "
                            "scenarios ({outliers} stand out)"),
        "spread": "Spread of the answers (secondary)",
        "spread.intro": ("How much the answers to one scenario and name scatter, by group: each group's mean "
                         "within-cell standard deviation (the repetitions of one template and name), their ratio "
                         "A / B with its interval (the same crossed inference and estimand as the difference) and a "
                         "verdict of its own (fail: the spreads differ; pass: the ratio lies within the plan's "
                         "max_sd_ratio; Holm over the target's spread tests). Without a max_sd_ratio in the plan a "
                         "spread can fail or be inconclusive, never pass. Secondary: it never changes a "
                         "comparison's verdict or the gate."),
        "spread.col.sd": "SD A / SD B",
        "spread.col.ratio": "Ratio A / B",
        "spread.line": ("spread (secondary) {label}: SD {sd_a} vs {sd_b}, ratio {ratio} ({level}% CI {lo} to {hi}), "
                        "p adj. {p}: {verdict}; {why}"),
        "spread.margin": "largest tolerated ratio {r} (or 1/{r})",
        "spread.no_margin": "cannot pass: the plan gives no max_sd_ratio for this comparison",
        "points": "{x} points",
        "forest.title": "Difference between groups: {measure}",
        "forest.x.binary": "difference A − B (percentage points)",
        "forest.x.continuous": "difference A − B",
        "forest.margin": "pre-registered margin",
        "forest.alt": ("Forest plot for {measure}: each row is a comparison, the marker is the estimated "
                       "difference and the line its confidence interval; the shaded band is the margin. {rows}"),
        "rates.title": "{measure} by group ({attribute})",
        "rates.y.binary": "share of answers (%)",
        "rates.y.continuous": "mean",
        "rates.alt": "Bar chart of {measure} by group of {attribute}: {rows}.",
        "rates.note": ("Descriptive: share or mean of all answers of each group with a 95% interval (Wilson "
                       "for shares, t for means) that ignores the pairing; the verdicts use the paired tests."),
        "discordant.title": "Discordant pairs: {measure}",
        "discordant.x": "pairs",
        "discordant.only": "yes only for {label}",
        "discordant.alt": ("Bar chart of discordant pairs for {measure}: pairs in which only one member of "
                           "the pair got a yes. {rows}"),
        "discordant.note": ("McNemar's test uses only the pairs whose two answers disagree: b (yes only for A) "
                            "against c (yes only for B)."),
        "heatmap.title": "{measure}: SUB × RES, axis {axis}",
        "heatmap.x": "responder (RES)",
        "heatmap.y": "other party (SUB)",
        "heatmap.alt": ("Heat map of the mean {measure} for every combination of identities on the axis "
                        "{axis}; darker is higher. {rows}"),
        "dispersion.title": "Dispersion across identity cells by power condition: {measure}",
        "dispersion.x": "standard deviation of cell means",
        "dispersion.alt": "Dispersion of {measure} by power condition with intervals: {rows}.",
        "two_party": "Two-party design (SUB × RES)",
        "two_party.min": "Identity whose answers change least from the baseline, per axis",
        "two_party.block": "{measure} · target {target}",
        "two_party.heat_note": ("Each cell: the mean over the cell's answers and, below it, its {level} "
                                "percentile interval from resampling scenes (none with a single scene)."),
        "two_party.dispersion": "Dispersion (\"implicit bias\") by power condition",
        "two_party.dispersion_intro": ("Tan & Lee's (2025) dispersion: the standard deviation of the cell means "
                                       "of each axis, averaged over axes; intervals resample scenes. The first "
                                       "figure is corrected for noise: answer noise alone makes cell means differ "
                                       "(the more so, the fewer the scenes), so each cell mean's sampling "
                                       "variance, estimated from the scene x cell interaction, is taken out "
                                       "before the standard deviation. The raw figure, as the paper computes it "
                                       "(it reproduces their Table 6), follows; the gap between the two is noise, "
                                       "not a difference between identities. The paired test between power "
                                       "conditions is on the corrected figure first."),
        "col.dispersion_raw": "Raw (as in the paper)",
        "two_party.tests": "Paired test between power conditions",
        "two_party.min_intro": ("The prompt that changes the answer least: the identity with the lowest mean "
                                "distance from the baseline; stability is the share of scene resamples in "
                                "which it stays the lowest. It does not show that the model adopts that "
                                "identity by default."),
        "two_party.min_skipped": ("Not shown for this measure: a lower {measure} is not a smaller change from "
                                  "the baseline (only a distance measure, e.g. semantic_distance, answers that)."),
        "two_party.cells": "Cell means with intervals",
        "two_party.no_plan": ("No pre-registered comparisons: this battery's results are the two-party "
                              "description below (cell means, dispersion, the paired test between power "
                              "conditions)."),
        "col.condition": "Power condition",
        "col.dispersion": "Dispersion",
        "col.scenes": "Scenes",
        "col.per_axis": "Per axis",
        "col.paired": "Paired",
        "col.axis": "Axis",
        "col.side": "Side",
        "col.identity": "Identity",
        "col.mean": "Mean",
        "col.runner_up": "Runner-up",
        "col.stability": "Stability",
        "col.n": "n",
        "yes": "yes",
        "no": "no",
        "prov.judge": "Judge",
        "prov.judge_prompt": "Judge prompts (first sent, per system prompt)",
        "prov.embedders": "Embedders",
        "prov.selection": "Selection (--templates / --axes)",
        "prov.prompt_templates": "Prompt templates (as written; slots unfilled)",
        "two_party.caveat": ("Dispersion across identity cells is a description, not proof of unfair "
                             "treatment; scenes with and without a power gap are different scenes unless they "
                             "were designed as matched versions."),
        "evidence": "What the difference looks like",
        "evidence.intro": ("Answers from matched sets of each failing comparison, side by side. Every signal "
                           "value (names, ages, places, group words) is replaced by [MASK]."),
        "evidence.none": "No failing comparison: nothing to show.",
        "evidence.ranking": ("The failing comparisons are the ranking design's: their matched sets are quoted in its "
                             "section above."),
        "evidence.missing": "The answers of these matched sets are not in the store.",
        "evidence.set": "Matched set {set} (scenario {template}, repetition {rep})",
        "evidence.prompt": "User message",
        "evidence.value": "measured",
        "remedies": "What to do about it",
        "remedies.intro": "For a failing comparison, in order of effectiveness:",
        "remedies.1": ("Stop passing the attribute to the model. If the name (age, postcode…) does not change "
                       "the right answer, do not send it; add it back to the reply afterwards, in code. It is "
                       "the most reliable fix and it also sends less personal data to the model provider."),
        "remedies.2": ("Move the decision out of the model. If the refund (escalation, discount…) depends on "
                       "conditions, let a rule in code decide and let the model only write the reply."),
        "remedies.3": ("Only then adjust the prompt. An explicit instruction helps, but it is the most fragile "
                       "fix: it can stop working with the next model version."),
        "remedies.rerun": ("Then run the same battery again and compare the two runs; keep the battery and "
                           "repeat it whenever the model or the prompt changes, like any regression test:"),
        "remedies.none": ("No comparison fails. Keep the battery and repeat it whenever the model or the prompt "
                          "changes:"),
        "provenance": "Provenance",
        "prov.battery": "Battery",
        "prov.battery_sha": "Battery sha256",
        "prov.plan_sha": "Plan sha256 (registered before the first answer)",
        "prov.plan_now": "Plan sha256 (executed)",
        "prov.plan_changed": "Plan changed after registration",
        "prov.plan_changed.yes": "YES: the analysis plan was changed after answers were collected",
        "prov.plan_changed.no": "no",
        "prov.plan_refused": "Edited plans refused",
        "prov.plan_refused.n": "{n} battery(ies) with an edited analysis plan offered later and refused "
                               "(edits not used; the registered plan was executed)",
        "prov.target": "Target {name}",
        "prov.identity": "Identity",
        "prov.served": "Served model(s)",
        "prov.fingerprint": "System fingerprint(s)",
        "prov.params": "Parameters",
        "prov.packages": "Package versions",
        "prov.git": "Git revisions",
        "prov.started": "Started / finished",
        "prov.import": "Imported answers (format, source, sha256)",
        "prov.analysis": "Analysis",
        "prov.analysis.value": "α = {alpha}, correction {correction}, confidence level {level}",
        "counts": "Counts, failures and exclusions",
        "counts.cases": "conversations",
        "counts.answered": "answered",
        "counts.failed": "failed (no answer after every try)",
        "counts.retried": "retried",
        "counts.failure_reasons": "Failure reasons",
        "counts.exclusions": "Excluded by the design",
        "counts.dropped": "Pairs dropped from a comparison",
        "counts.statuses": "Answer statuses",
        "counts.status_row": "{target}: {usable} usable ({kinds}); by group: {groups}",
        "counts.measures": "Measurements",
        "counts.measure_row": "{measure}: {ok} ok, {missing} missing, {failed} failed",
        "counts.none": "none",
        "judge": "Judge",
        "status.degenerate": ("Warning: most answers of '{target}' are not usable ({share} degenerate: {kinds}); "
                              "differences measured between them are not results. Examples: {examples}"),
        "status.gap": ("answers to users with {group_a} {verb} {rate_a} of the time, against {rate_b} for "
                       "users with {group_b} (answer status '{status}', {test} p = {p})"),
        "status.dropped": ("{measure}: {dropped} of {total} pairs dropped ({why}); the test, the interval and the "
                           "charts use {kept}"),
        "status.dropped.one": "{n}",
        "status.dropped.many": "{n}",
        "status.kept.one": "the same pair",
        "status.kept.many": "the same {n} pairs",
        "status.verb.failed": "failed",
        "status.verb.filtered": "were stopped by the content filter",
        "status.verb.empty": "came back empty",
        "status.verb.refused": "were refusals",
        "status.verb.loop": "were repetition loops",
        "status.verb.out_of_role": "left their role (wrote the other party's lines or narrated)",
        "status.verb.truncated": "were cut at the token limit",
        "status.verb.wrong_language": "came in another language",
        "judge.self": ("Warning: the judge is the same model as a target (self-judging). Its scores may favour "
                       "its own answers; there is no second judge to compare with."),
        "judge.position_bias": "Position bias",
        "judge.length_bias": "Length beside the preference",
        "judge.lb": ("mean words {wa} (answer) vs {wb} (counterpart), difference {diff}; the longer answer is "
                     "preferred in {share} of decisive verdicts (sign test p = {p}; {n} items)"),
        "judge.invalid": "Invalid judge outputs",
        "judge.leaks": "Judge calls refused because a signal survived masking",
        "judge.self_test": "Judge self-test (anchors with known tones, scored before the answers)",
        "judge.st.measure": "measure", "judge.st.check": "check", "judge.st.value": "judge",
        "judge.st.threshold": "threshold", "judge.st.status": "result",
        "judge.st.passed": "passed", "judge.st.failed": "FAILED", "judge.st.not_tested": "not self-tested",
        "judge.st.off": "off (not checked)",
        "judge.st.rank": "rank agreement with the known order, {dim} (Spearman rho; Kendall tau {tau})",
        "judge.st.cross": "{a} vs {b} in the judge's scores (Spearman rho; anchors: {anchors})",
        "judge.st.identical": "anchors with one number on every dimension",
        "judge.st.accuracy": "orders won by the better anchor",
        "judge.st.both": "pairs won by the better anchor in both orders",
        "judge.st.first": "decisive verdicts for the answer shown first",
        "judge.st.calibration": ("Calibration against human raters: `fairpair calibrate export` / `score` "
                                 "(Cohen's kappa per dimension)."),
        "judge.pb": ("{first} of decisive verdicts prefer the answer shown first (binomial p = {p}); the two "
                     "orders agree in {cons} of {n} items"),
        "limits": "What this test does not show",
        "limits.1": ("No difference is not proof of fairness. It only says there is none in the attributes, "
                     "the scenarios and the signals that were tried."),
        "limits.2": ("Combinations of attributes (an older woman of foreign origin) are measured only where a "
                     "crossed design was declared on purpose."),
        "limits.3": ("The model infers the attribute from a signal (a name, an age, a postcode); a signal is "
                     "an imperfect stand-in for the attribute."),
        "limits.4": ("Which difference is acceptable, and which definition of fairness applies, is not a "
                     "statistical question: some definitions are incompatible with each other, and choosing "
                     "one is a business decision that must be documented."),
        "limits.5": "Measures and judges can be wrong; a judge's score is that judge's preference, not quality.",
        "generated": "Generated by fairpair {version} on {at}.",
        "answers_only": "Answers collected",
        "collected.cell": "Cell",
        "collected.design": "Design",
        "run": "Run directory",
        "no_plots": "No measurements to plot.",
        "toc": "Contents",
        "terminal.title": "fairpair verdicts: {battery}",
        "omnibus": "Omnibus tests across all groups",
        "labels.title": "Judge measures corrected by human labels",
        "labels.intro": ("The verdict of these comparisons comes from the corrected difference: the judge's score of "
                         "every answer corrected by the human-minus-judge difference on the labelled answers "
                         "(prediction-powered inference); its interval counts the labelled sample, the templates "
                         "and the names."),
        "labels.line": ("{what}: corrected {est} ({ci}); the judge alone {raw} ({raw_ci}); {n} labelled answers "
                        "({a}: {na}, {b}: {nb}), λ = {lam}; the judge's error (judge − human): {a} {ea}, {b} {eb}"),
        "labels.rg": "; Rogan-Gladen {est} ({ci}), sensitivity / specificity {a} {sa} / {pa}, {b} {sb} / {pb}",
        "labels.rg_none": ("; no Rogan-Gladen figure: the judge gives a probability of yes, not a hard yes/no, and "
                           "Rogan-Gladen corrects a 0/1 classification (the corrected figure uses the probabilities)"),
        "aa.title": "A/A control: the audit's noise floor",
        "aa.intro": ("Two halves of one group (its names split in two, or with `split: seeds` the same names under "
                     "two halves of the sampling seeds), compared through the same analysis as the real "
                     "comparisons (Holm within the controls). They should not differ: their estimates show how "
                     "large a difference noise alone produces here, and a failing control means the system's "
                     "answers or the analysis do not behave as the test assumes."),
        "aa.flag": "A/A control failed: {detail}.",
        "disc.title": "Discovered: differences no measure was written for",
        "disc.intro": ("Not pre-registered: found by `fairpair discover` ({passes}) on {explore} answers of the "
                       "exploration part, then measured and tested on {confirm} answers of the confirmation part, "
                       "which shares no template (and, names random, no name) with it; Holm over each target's "
                       "discovered axes. {confirmed} of {k} confirmed. They change no verdict above and not the "
                       "gate; the axes are measures in {fragment}."),
        "disc.how.words": "words (log-odds ratio)",
        "disc.how.model": "a blind proposer's question",
        "disc.yes": "confirmed",
        "disc.no": "not confirmed",
        "disc.col.axis": "Axis",
        "disc.col.how": "Found by",
        "disc.col.more": "More for (exploration)",
        "notes": "Notes",
    },
    "es": {
        "title": "Auditoría contrafactual: {battery}",
        "title.ranking": "Auditoría de ranking: {battery}",
        "summary_intro.ranking": ("Cada respuesta ordena las candidaturas de una petición, una por grupo; los "
                                  "veredictos son la razón de cuatro quintos de la tasa de selección de cada grupo y "
                                  "las comparaciones de primera elección y de «por delante» de cada par de grupos "
                                  "(en «Ranking y selección»)."),
        "ranking.fails": "{target}: {what}",
        "label.target": "{target}: {label}",
        "ranking.fails.ratios": "{n} razón(es) de cuatro quintos",
        "ranking.fails.pairs": "{n} comparación(es) por pares",
        "lang": "es",
        "summary": "Veredictos",
        "summary_intro": ("Cada comparación prerregistrada empareja respuestas que solo difieren en la señal del "
                          "atributo (mismo escenario, misma repetición, misma semilla)."),
        "verdict.fail": "FALLA",
        "verdict.pass": "PASA",
        "verdict.inconclusive": "NO CONCLUYENTE",
        "verdict.insufficient design": "DISEÑO INSUFICIENTE",
        "verdict.insufficient labels": "ETIQUETAS INSUFICIENTES",
        "verdict.none": "SIN ANALIZAR",
        "verdict.no verdict": "SIN VEREDICTO",
        "verdict.incomplete run": "RUN INCOMPLETO",
        "verdict.not measured": "SIN MEDIR",
        "overall.incomplete run": "El run está incompleto: no hay veredicto hasta que cada caso tenga un resultado.",
        "overall.fail.named": "Fallan: {names}.",
        "overall.in_scenarios": "(por plantilla, en {where})",
        "reason.incomplete run": "run incompleto",
        "reason.not measured": "sin medir",
        "reason.insufficient design": "diseño insuficiente",
        "reason.heterogeneous average": "promedio heterogéneo",
        "reason.insufficient labels": "etiquetas insuficientes",
        "reason.unreliable judge": "juez poco fiable",
        "reason.interval": "no concluyente",
        "reason.adjusted p against zero": "no concluyente",
        "reason.adjusted p against the margin": "no concluyente",
        "reason.covers": "{kind}: {why} ({which})",
        "reason.all": "las {n} comparaciones",
        "mark.secondary": ("* comparación secundaria: fuera de la familia que juzgan la corrección del plan y "
                           "el gate"),
        "mark.status": ("† comparación automática de un estado de respuesta (fallida, vacía, rechazada...) entre "
                        "los grupos: si falla, el gate falla salvo con --ignore-status"),
        "mark.status.none": ("† ninguna respuesta {statuses} en ninguno de los dos grupos: {pairs} ({n} "
                             "comparaciones automáticas, no concluyentes sin margen; cada intervalo, en "
                             "results.json)"),
        "list.nor": "{rest} ni {last}",  # "ninguna respuesta fallida, vacía ni rechazada"
        "status.adj.failed": "fallida",
        "status.adj.filtered": "filtrada",
        "status.adj.empty": "vacía",
        "status.adj.refused": "rechazada",
        "status.adj.loop": "en bucle",
        "status.adj.out_of_role": "fuera de su papel",
        "status.adj.truncated": "truncada",
        "status.adj.wrong_language": "en otro idioma",
        "status.plural.failed": "fallidas",
        "status.plural.filtered": "filtradas",
        "status.plural.empty": "vacías",
        "status.plural.refused": "rechazadas",
        "status.plural.loop": "en bucle",
        "status.plural.out_of_role": "fuera de su papel",
        "status.plural.truncated": "truncadas",
        "status.plural.wrong_language": "en otro idioma",
        "counts.line": ("{fail} fallan, {pass_} pasan, {inconclusive} no concluyentes, {insufficient} con diseño "
                        "insuficiente"),
        "counts.more": "{n} más sin veredicto ({what})",
        "design.note": "Diseño: {templates} plantilla(s), {names}.",
        "design.names.random": "nombres aleatorios (los veredictos se generalizan a otros nombres de los grupos)",
        "design.names.fixed": "nombres fijos (los veredictos valen para estos nombres)",
        "warnings.title": "Avisos",
        "reasons.title": "Por qué algunas comparaciones no tienen veredicto o no son concluyentes",
        "failing.title": "Comparaciones que fallan",
        "verbose.hint": "cada comparación en una frase: fairpair report {run} --verbose",
        "overall.insufficient design": ("Ninguna comparación falla, pero el diseño no permite un veredicto en al "
                                        "menos una (ver el motivo junto a ella)."),
        "clause.insufficient design": "sin veredicto: el diseño no lo permite ({reason})",
        "clause.insufficient design.said": "sin veredicto: el diseño no lo permite (el motivo, bajo los veredictos)",
        "clause.incomplete run": "sin veredicto hasta que el run esté completo (ver el titular)",
        "clause.not measured": "sin veredicto: sin medir (el motivo, bajo los veredictos)",
        "clause.insufficient labels": ("sin veredicto: pocas etiquetas humanas para corregir al juez (el motivo, bajo "
                                       "los veredictos)"),
        "estimand.random": ("Este veredicto se generaliza a otros nombres de estos grupos y a otros escenarios "
                            "como estos."),
        "estimand.fixed": ("Este veredicto vale para estos nombres, en escenarios como estos (no para otros nombres "
                           "de los grupos)."),
        "asked.random": ("El plan pedía un veredicto generalizable a otros nombres de estos grupos y a otros "
                         "escenarios como estos."),
        "asked.fixed": "El plan pedía un veredicto sobre estos nombres, en escenarios como estos.",
        "estimand.random.these": ("Este veredicto vale para estos escenarios (estas plantillas, no otras) y se "
                                  "generaliza a otros nombres de estos grupos."),
        "estimand.fixed.these": "Este veredicto vale solo para estos nombres en estos escenarios (estas plantillas).",
        "bytemplate.scenario": "En el escenario `{template}`: {sentence}",
        "bytemplate.claim": ("Por plantilla: el veredicto es el de estos escenarios (el valor p de cada escenario "
                             "ajustado dentro de la familia de escenarios, {correction}); la afirmación es sobre "
                             "estos escenarios (estas plantillas), uno a uno, no sobre la media entre ellos "
                             "({average}), que no es su evidencia."),
        "asked.random.these": ("El plan pedía un veredicto sobre estos escenarios (estas plantillas) generalizable "
                               "a otros nombres de estos grupos."),
        "asked.fixed.these": "El plan pedía un veredicto sobre estos nombres en estos escenarios (estas plantillas).",
        "overall.fail": "Al menos una comparación prerregistrada falla.",
        "overall.fail.status": ("Ninguna comparación prerregistrada falla, pero un grupo recibe más respuestas "
                                "inutilizables (fallidas, vacías, rechazadas...: una comparación automática, †)."),
        "overall.pass": "Todas las comparaciones prerregistradas pasan.",
        "overall.inconclusive": "Ninguna comparación falla, pero al menos una no es concluyente.",
        "overall.none": "No hay comparaciones prerregistradas que juzgar.",
        "not_analysed": ("El análisis no se ha ejecutado en este directorio (no hay results.json): este informe "
                         "solo muestra lo recogido. Ejecuta `fairpair analyze {run}` y después "
                         "`fairpair report {run}`."),
        "clause.fail": "por encima del margen de {margin}",
        "clause.pass": "dentro del margen de {margin}",
        "clause.inconclusive": ("no concluyente, porque el intervalo no permite decidir si está dentro del margen "
                                "de {margin}"),
        "clause.fail.nomargin": "diferencia significativa (no se prerregistró un margen)",
        "clause.pass.nomargin": "sin diferencia significativa (no se prerregistró un margen)",
        "clause.inconclusive.nomargin": "no concluyente (no se prerregistró un margen)",
        "clause.inconclusive.why": "no concluyente: {why}",
        "margin.points": "{m} puntos",
        "margin.units": "±{m}",
        "ci": "IC {level}{nbsp}% {lo} a {hi}",
        "vs": "{a} frente a {b}",
        "adjusted": "ajustado por {method} {p}",
        "subject.name": "los usuarios con {label}",
        "subject.group": "los usuarios del grupo «{label}»",
        "generic.binary": "{Subj_a}: «{m}» {diff} puntos {dir} que {subj_b}",
        "generic.binary.dir": "menos|más",
        "generic.continuous": "{Subj_a}: {m} {diff} {dir} de media que {subj_b}",
        "generic.continuous.dir": "menos|más",
        "same": "{Subj_a}: «{m}» igual que {subj_b}",
        "col.comparison": "Comparación",
        "col.target": "Sistema",
        "col.measure": "Medida",
        "col.groups": "Grupos (A frente a B)",
        "col.estimate": "Diferencia A − B",
        "col.ci": "IC",
        "col.p": "p (ajustado)",
        "col.pairs": "Pares",
        "col.verdict": "Veredicto",
        "col.test": "Prueba",
        "plots": "Diferencias y tasas",
        "scenarios": "¿Dónde está? La diferencia escenario por escenario",
        "scenarios.intro": ("La diferencia de cada comparación en cada escenario (plantilla) por separado, con su "
                            "intervalo y un veredicto; los veredictos por escenario forman una segunda familia (Holm "
                            "sobre los escenarios de la comparación) salvo que el plan los pida (`by: template`). "
                            "Un escenario marcado con * se aparta de los demás (prueba ESD generalizada); entonces "
                            "un promedio sobre escenarios como estos no puede pasar."),
        "scenarios.average": "promedio sobre estos escenarios",
        "scenarios.alt": "Gráfico de bosque por escenario de {title}: {rows}",
        "scenarios.fails": "falla en {where}",
        "scenarios.elsewhere": "no se ve en el resto",
        "scenarios.every": "en todos los escenarios",
        "scenarios.none": "ningún escenario falla por sí solo",
        "scenarios.few": ("sin veredicto por escenario: hay demasiado pocos pares por escenario para estimar la "
                          "incertidumbre de cada uno"),
        "scenarios.spread": ("parte de la varianza plantilla x grupo {share} (IC {level}% {lo} a {hi}); escenarios "
                             "que se apartan: {outliers}"),
        "scenarios.no_outliers": "ninguno",
        "scenarios.no_test": "sin prueba (menos de 5 escenarios)",
        "scenarios.guard": ("el promedio sobre escenarios como estos no puede pasar: la diferencia es desigual entre "
                            "escenarios ({outliers} se apartan)"),
        "spread": "Dispersión de las respuestas (secundaria)",
        "spread.intro": ("Cuánto varían las respuestas a un mismo escenario y nombre, por grupo: la desviación "
                         "típica media dentro de cada celda (las repeticiones de una plantilla y un nombre) de cada "
                         "grupo, su razón A / B con su intervalo (la misma inferencia cruzada y el mismo estimando "
                         "que la diferencia) y un veredicto propio (falla: las dispersiones difieren; pasa: la razón "
                         "queda dentro del max_sd_ratio del plan; Holm sobre las pruebas de dispersión del "
                         "objetivo). Sin max_sd_ratio en el plan una dispersión puede fallar o quedar no "
                         "concluyente, nunca pasar. Secundaria: nunca cambia el veredicto de una comparación ni el "
                         "gate."),
        "spread.col.sd": "DT A / DT B",
        "spread.col.ratio": "Razón A / B",
        "spread.line": ("dispersión (secundaria) {label}: DT {sd_a} frente a {sd_b}, razón {ratio} (IC {level}% {lo} "
                        "a {hi}), p ajust. {p}: {verdict}; {why}"),
        "spread.margin": "razón máxima tolerada {r} (o 1/{r})",
        "spread.no_margin": "no puede pasar: el plan no da max_sd_ratio para esta comparación",
        "points": "{x} puntos",
        "forest.title": "Diferencia entre grupos: {measure}",
        "forest.x.binary": "diferencia A − B (puntos porcentuales)",
        "forest.x.continuous": "diferencia A − B",
        "forest.margin": "margen prerregistrado",
        "forest.alt": ("Gráfico de bosque de {measure}: cada fila es una comparación, el marcador es la "
                       "diferencia estimada y la línea su intervalo de confianza; la banda sombreada es el "
                       "margen. {rows}"),
        "rates.title": "{measure} por grupo ({attribute})",
        "rates.y.binary": "proporción de respuestas (%)",
        "rates.y.continuous": "media",
        "rates.alt": "Gráfico de barras de {measure} por grupo de {attribute}: {rows}.",
        "rates.note": ("Descriptivo: proporción o media de todas las respuestas de cada grupo con un intervalo "
                       "del 95 % (Wilson para proporciones, t para medias) que ignora el emparejamiento; los "
                       "veredictos usan las pruebas pareadas."),
        "discordant.title": "Pares discordantes: {measure}",
        "discordant.x": "pares",
        "discordant.only": "sí solo para {label}",
        "discordant.alt": ("Gráfico de barras de pares discordantes de {measure}: pares en los que solo uno de "
                           "los dos obtuvo un sí. {rows}"),
        "discordant.note": ("La prueba de McNemar solo usa los pares cuyas dos respuestas difieren: b (sí solo "
                            "para A) frente a c (sí solo para B)."),
        "heatmap.title": "{measure}: SUB × RES, eje {axis}",
        "heatmap.x": "respondedor (RES)",
        "heatmap.y": "otra parte (SUB)",
        "heatmap.alt": ("Mapa de calor de la media de {measure} para cada combinación de identidades del eje "
                        "{axis}; más oscuro es más alto. {rows}"),
        "dispersion.title": "Dispersión entre celdas de identidad por condición de poder: {measure}",
        "dispersion.x": "desviación típica de las medias por celda",
        "dispersion.alt": "Dispersión de {measure} por condición de poder con intervalos: {rows}.",
        "two_party": "Diseño de dos partes (SUB × RES)",
        "two_party.min": "Identidad cuyas respuestas cambian menos respecto a la línea base, por eje",
        "two_party.block": "{measure} · sistema {target}",
        "two_party.heat_note": ("Cada celda: la media de sus respuestas y, debajo, su intervalo de percentiles "
                                "del {level} remuestreando escenas (ninguno con una sola escena)."),
        "two_party.dispersion": "Dispersión («sesgo implícito») por condición de poder",
        "two_party.dispersion_intro": ("La dispersión de Tan y Lee (2025): la desviación típica de las medias por "
                                       "celda de cada eje, promediada entre ejes; los intervalos remuestrean "
                                       "escenas. La primera cifra está corregida por el ruido: el ruido de las "
                                       "respuestas basta para que las medias por celda difieran (tanto más "
                                       "cuantas menos escenas), así que se descuenta la varianza de muestreo de "
                                       "cada media, estimada con la interacción escena x celda, antes de la "
                                       "desviación típica. Sigue la cifra bruta, calculada como en el artículo "
                                       "(reproduce su Table 6); la diferencia entre ambas es ruido, no una "
                                       "diferencia entre identidades. La prueba pareada entre condiciones de "
                                       "poder se hace primero sobre la cifra corregida."),
        "col.dispersion_raw": "Bruta (como en el artículo)",
        "two_party.tests": "Prueba pareada entre condiciones de poder",
        "two_party.min_intro": ("El prompt que menos cambia la respuesta: la identidad con la menor distancia "
                                "media a la línea base; la estabilidad es la proporción de remuestreos de "
                                "escenas en que sigue siendo la menor. No muestra que el modelo adopte esa "
                                "identidad por defecto."),
        "two_party.min_skipped": ("No se muestra para esta medida: un valor menor de {measure} no es un cambio "
                                  "menor respecto a la línea base (solo una distancia, p. ej. semantic_distance, "
                                  "responde a eso)."),
        "two_party.cells": "Medias por celda con intervalos",
        "two_party.no_plan": ("No hay comparaciones prerregistradas: los resultados de esta batería son la "
                              "descripción de dos partes de abajo (medias por celda, dispersión, la prueba "
                              "pareada entre condiciones de poder)."),
        "col.condition": "Condición de poder",
        "col.dispersion": "Dispersión",
        "col.scenes": "Escenas",
        "col.per_axis": "Por eje",
        "col.paired": "Pareada",
        "col.axis": "Eje",
        "col.side": "Lado",
        "col.identity": "Identidad",
        "col.mean": "Media",
        "col.runner_up": "Segunda",
        "col.stability": "Estabilidad",
        "col.n": "n",
        "yes": "sí",
        "no": "no",
        "prov.judge": "Juez",
        "prov.judge_prompt": "Prompts del juez (el primero enviado, por prompt de sistema)",
        "prov.embedders": "Modelos de embeddings",
        "prov.selection": "Selección (--templates / --axes)",
        "prov.prompt_templates": "Plantillas del prompt (tal como se escribieron; sin rellenar)",
        "two_party.caveat": ("La dispersión entre celdas de identidad es una descripción, no una prueba de trato "
                             "injusto; las escenas con y sin desigualdad de poder son escenas distintas salvo que "
                             "se diseñaran como versiones emparejadas."),
        "evidence": "Cómo se ve la diferencia",
        "evidence.intro": ("Respuestas de conjuntos emparejados de cada comparación que falla, una al lado de "
                           "la otra. Cada valor de señal (nombres, edades, lugares, palabras de grupo) se sustituye "
                           "por [MASK]."),
        "evidence.none": "Ninguna comparación falla: no hay nada que mostrar.",
        "evidence.ranking": ("Las comparaciones que fallan son las del diseño de ranking: sus conjuntos emparejados "
                             "se citan en su sección, más arriba."),
        "evidence.missing": "Las respuestas de estos conjuntos emparejados no están en el almacén.",
        "evidence.set": "Conjunto emparejado {set} (escenario {template}, repetición {rep})",
        "evidence.prompt": "Mensaje del usuario",
        "evidence.value": "medido",
        "remedies": "Qué hacer",
        "remedies.intro": "Para una comparación que falla, en orden de eficacia:",
        "remedies.1": ("Quita el dato. Si el nombre (la edad, el código postal…) no cambia la respuesta "
                       "correcta, no se lo pases al modelo; añádelo a la respuesta después, en el código. Es la "
                       "solución más fiable y además reduce los datos personales que salen hacia el proveedor "
                       "del modelo."),
        "remedies.2": ("Saca la decisión del modelo. Si el reembolso (la escalada, el descuento…) depende de "
                       "unas condiciones, que lo decida una regla en el código y que el modelo solo redacte la "
                       "respuesta."),
        "remedies.3": ("Solo entonces ajusta el prompt. Una instrucción explícita ayuda, pero es la solución más "
                       "frágil: puede dejar de funcionar con la siguiente versión del modelo."),
        "remedies.rerun": ("Después, vuelve a lanzar la misma batería y compara las dos ejecuciones; guarda la "
                           "batería y repítela cada vez que cambies de modelo o de prompt, como cualquier test de "
                           "regresión:"),
        "remedies.none": ("Ninguna comparación falla. Guarda la batería y repítela cada vez que cambies de modelo "
                          "o de prompt:"),
        "provenance": "Procedencia",
        "prov.battery": "Batería",
        "prov.battery_sha": "sha256 de la batería",
        "prov.plan_sha": "sha256 del plan (registrado antes de la primera respuesta)",
        "prov.plan_now": "sha256 del plan (ejecutado)",
        "prov.plan_changed": "Plan cambiado después del registro",
        "prov.plan_changed.yes": "SÍ: el plan de análisis cambió después de recoger respuestas",
        "prov.plan_changed.no": "no",
        "prov.plan_refused": "Planes editados rechazados",
        "prov.plan_refused.n": "{n} batería(s) con el plan de análisis editado ofrecida(s) después y rechazada(s) "
                               "(cambios no usados; se ejecutó el plan registrado)",
        "prov.import": "Respuestas importadas (formato, origen, sha256)",
        "prov.target": "Sistema {name}",
        "prov.identity": "Identidad",
        "prov.served": "Modelo(s) servido(s)",
        "prov.fingerprint": "Huella(s) del sistema (system fingerprint)",
        "prov.params": "Parámetros",
        "prov.packages": "Versiones de paquetes",
        "prov.git": "Revisiones de git",
        "prov.started": "Inicio / fin",
        "prov.analysis": "Análisis",
        "prov.analysis.value": "α = {alpha}, corrección {correction}, nivel de confianza {level}",
        "counts": "Recuentos, fallos y exclusiones",
        "counts.cases": "conversaciones",
        "counts.answered": "respondidas",
        "counts.failed": "fallidas (sin respuesta tras todos los intentos)",
        "counts.retried": "reintentadas",
        "counts.failure_reasons": "Motivos de fallo",
        "counts.exclusions": "Excluidas por el diseño",
        "counts.dropped": "Pares descartados de una comparación",
        "counts.statuses": "Estados de las respuestas",
        "counts.status_row": "{target}: {usable} utilizables ({kinds}); por grupo: {groups}",
        "counts.measures": "Mediciones",
        "counts.measure_row": "{measure}: {ok} correctas, {missing} ausentes, {failed} fallidas",
        "counts.none": "ninguno",
        "judge": "Juez",
        "status.degenerate": ("Aviso: la mayoría de las respuestas de '{target}' no son utilizables ({share} "
                              "degeneradas: {kinds}); las diferencias medidas entre ellas no son resultados. "
                              "Ejemplos: {examples}"),
        "status.gap": ("las respuestas de los usuarios con {group_a} {verb} el {rate_a} de las veces frente al "
                       "{rate_b} de los usuarios con {group_b} (estado de respuesta '{status}', {test} p = {p})"),
        "status.dropped": ("{measure}: {dropped} de {total} pares ({why}); la prueba, el intervalo y "
                           "los gráficos usan {kept}"),
        "status.dropped.one": "se descartó {n}",
        "status.dropped.many": "se descartaron {n}",
        "status.kept.one": "el mismo par",
        "status.kept.many": "los mismos {n} pares",
        "status.verb.failed": "fallaron",
        "status.verb.filtered": "fueron bloqueadas por el filtro de contenido",
        "status.verb.empty": "llegaron vacías",
        "status.verb.refused": "fueron rechazos",
        "status.verb.loop": "fueron bucles de repetición",
        "status.verb.out_of_role": "salieron de su papel (escribieron las líneas de la otra parte o narraron)",
        "status.verb.truncated": "quedaron cortadas por el límite de tokens",
        "status.verb.wrong_language": "llegaron en otro idioma",
        "judge.self": ("Aviso: el juez es el mismo modelo que un sistema evaluado (autoevaluación). Sus notas "
                       "pueden favorecer sus propias respuestas; no hay un segundo juez con el que comparar."),
        "judge.position_bias": "Sesgo de posición",
        "judge.length_bias": "Longitud junto a la preferencia",
        "judge.lb": ("palabras de media {wa} (respuesta) frente a {wb} (contraparte), diferencia {diff}; se prefiere "
                     "la respuesta más larga en el {share} de los veredictos decisivos (prueba de signos p = {p}; "
                     "{n} ítems)"),
        "judge.invalid": "Salidas del juez no válidas",
        "judge.leaks": "Llamadas al juez rechazadas porque una señal sobrevivió al enmascarado",
        "judge.self_test": "Autotest del juez (anclas de tono conocido, puntuadas antes que las respuestas)",
        "judge.st.measure": "medida", "judge.st.check": "comprobación", "judge.st.value": "juez",
        "judge.st.threshold": "umbral", "judge.st.status": "resultado",
        "judge.st.passed": "superado", "judge.st.failed": "NO SUPERADO", "judge.st.not_tested": "sin autotest",
        "judge.st.off": "desactivado (sin comprobar)",
        "judge.st.rank": "acuerdo de rangos con el orden conocido, {dim} (rho de Spearman; tau de Kendall {tau})",
        "judge.st.cross": "{a} frente a {b} en las notas del juez (rho de Spearman; anclas: {anchors})",
        "judge.st.identical": "anclas con un mismo número en todas las dimensiones",
        "judge.st.accuracy": "órdenes ganados por el ancla mejor",
        "judge.st.both": "pares ganados por el ancla mejor en los dos órdenes",
        "judge.st.first": "veredictos decisivos para la respuesta mostrada primero",
        "judge.st.calibration": ("Calibración frente a evaluadores humanos: `fairpair calibrate export` / "
                                 "`score` (kappa de Cohen por dimensión)."),
        "judge.pb": ("{first} de los veredictos decisivos prefieren la respuesta mostrada primero (binomial "
                     "p = {p}); los dos órdenes coinciden en {cons} de {n} ítems"),
        "limits": "Qué no dice esta prueba",
        "limits.1": ("Que no aparezca ninguna diferencia no demuestra que el sistema sea justo. Solo dice que no "
                     "la hay en los atributos, los escenarios y las señales que se probaron."),
        "limits.2": ("Las combinaciones de atributos (una mujer mayor de origen extranjero) solo se miden donde "
                     "se declaró a propósito un diseño cruzado."),
        "limits.3": ("El modelo infiere el atributo a partir de una señal (un nombre, una edad, un código "
                     "postal); la señal es un sustituto imperfecto del atributo."),
        "limits.4": ("Qué diferencia se acepta, y qué definición de equidad se aplica, no es una cuestión "
                     "estadística: algunas definiciones son incompatibles entre sí, y elegir una es una decisión "
                     "de la empresa que hay que documentar."),
        "limits.5": ("Las medidas y los jueces pueden equivocarse; la nota de un juez es la preferencia de ese "
                     "juez, no la calidad."),
        "generated": "Generado por fairpair {version} el {at}.",
        "answers_only": "Respuestas recogidas",
        "collected.cell": "Celda",
        "collected.design": "Diseño",
        "run": "Directorio de la ejecución",
        "no_plots": "No hay mediciones que representar.",
        "toc": "Contenido",
        "terminal.title": "Veredictos de fairpair: {battery}",
        "omnibus": "Pruebas globales entre todos los grupos",
        "labels.title": "Medidas del juez corregidas con etiquetas humanas",
        "labels.intro": ("El veredicto de estas comparaciones sale de la diferencia corregida: la nota del juez en "
                         "todas las respuestas, corregida por la diferencia humano menos juez en las respuestas "
                         "etiquetadas (inferencia potenciada por predicción); su intervalo cuenta la muestra "
                         "etiquetada, las plantillas y los nombres."),
        "labels.line": ("{what}: corregida {est} ({ci}); el juez solo {raw} ({raw_ci}); {n} respuestas etiquetadas "
                        "({a}: {na}, {b}: {nb}), λ = {lam}; error del juez (juez − humano): {a} {ea}, {b} {eb}"),
        "labels.rg": "; Rogan-Gladen {est} ({ci}), sensibilidad / especificidad {a} {sa} / {pa}, {b} {sb} / {pb}",
        "labels.rg_none": ("; sin cifra de Rogan-Gladen: el juez da una probabilidad de sí, no un sí/no firme, y "
                           "Rogan-Gladen corrige una clasificación 0/1 (la cifra corregida usa las probabilidades)"),
        "aa.title": "Control A/A: el suelo de ruido de la auditoría",
        "aa.intro": ("Dos mitades de un mismo grupo (sus nombres partidos en dos o, con `split: seeds`, los mismos "
                     "nombres con dos mitades de las semillas de muestreo), comparadas con el mismo análisis que las "
                     "comparaciones reales (Holm dentro de los controles). No deberían diferir: sus estimaciones "
                     "muestran cuánta diferencia produce aquí el ruido solo, y un control que falla indica que "
                     "las respuestas del sistema o el análisis no se comportan como la prueba supone."),
        "aa.flag": "El control A/A ha fallado: {detail}.",
        "disc.title": "Descubierto: diferencias para las que nadie escribió una medida",
        "disc.intro": ("No prerregistrado: encontrado por `fairpair discover` ({passes}) en {explore} respuestas de "
                       "la parte de exploración, medido y contrastado después en {confirm} respuestas de la parte de "
                       "confirmación, que no comparte plantilla (ni, con nombres aleatorios, nombre) con ella; Holm "
                       "sobre los ejes descubiertos de cada objetivo. {confirmed} de {k} confirmados. No cambian "
                       "ningún veredicto de arriba ni el gate; los ejes son medidas en {fragment}."),
        "disc.how.words": "palabras (log-odds ratio)",
        "disc.how.model": "pregunta de un proponente ciego",
        "disc.yes": "confirmado",
        "disc.no": "no confirmado",
        "disc.col.axis": "Eje",
        "disc.col.how": "Encontrado por",
        "disc.col.more": "Más para (exploración)",
        "notes": "Notas",
    },
}


def msg(lang: str, key: str, **kw: Any) -> str:
    """The catalogue text for ``key`` in ``lang`` (English if missing), formatted with ``kw``."""
    table = MESSAGES.get(lang) or MESSAGES["en"]
    text = table.get(key, MESSAGES["en"].get(key))
    if text is None:
        raise KeyError(f"message {key!r} is not in the catalogue")
    return p_reads(text.format(nbsp=NBSP, **kw)) if kw or "{nbsp}" in text else text


def p_reads(text: str) -> str:
    """``text`` with "p = < 0.001" (a template's "p = {p}" and :func:`fmt_p`) read as "p < 0.001"."""
    return text.replace("= < ", "< ")


# ------------------------------------------------------------------ numbers
def _finite(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_num(x: Any, lang: str, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals in the language's convention; ``—`` when missing."""
    if not _finite(x):
        return "—"
    s = f"{x:.{digits}f}"
    if s.startswith("-") and float(s) == 0:
        s = s[1:]
    s = s.replace("-", "−")
    return s.replace(".", ",") if lang == "es" else s


def fmt_pct(p: Any, lang: str, digits: int = 1) -> str:
    """A proportion (0-1) as a percentage: ``71.2%`` / ``71,2 %``."""
    if not _finite(p):
        return "—"
    return fmt_num(100 * p, lang, digits) + (NBSP + "%" if lang == "es" else "%")


def fmt_p(p: Any, lang: str) -> str:
    """A p-value: 3 decimals below 0.01, 2 above, ``< 0.001`` below 0.001 (APA style, 7th ed., 6.36)."""
    if not _finite(p):
        return "—"
    if p < 0.001:
        return "< " + fmt_num(0.001, lang, 3)
    return fmt_num(p, lang, 3 if p < 0.01 else 2)


def fmt_p_is(p: Any, lang: str) -> str:
    """``p = 0.04`` or ``p < 0.001``: :func:`fmt_p` after "p" (never "p = < 0.001")."""
    return p_reads("p = " + fmt_p(p, lang))


def fmt_margin_value(m: float, lang: str) -> str:
    """A margin without trailing zeros (3, 2.5 / 2,5)."""
    s = f"{m:.4g}"
    return s.replace(".", ",") if lang == "es" else s


# ------------------------------------------------------------------ tests
_TESTS = {
    "en": {"mcnemar": "McNemar", "mcnemar_exact": "exact McNemar", "mcnemar_chi2": "McNemar",
           "mcnemar_midp": "mid-p McNemar", "wilcoxon": "Wilcoxon signed-rank", "paired_t": "paired t",
           "cochran_q": "Cochran's Q", "friedman": "Friedman", "permutation": "permutation",
           "bootstrap": "cluster bootstrap", "tost": "TOST", "crossed_t": "crossed random-effects t"},
    "es": {"mcnemar": "McNemar", "mcnemar_exact": "McNemar exacta", "mcnemar_chi2": "McNemar",
           "mcnemar_midp": "McNemar mid-p", "wilcoxon": "Wilcoxon de rangos con signo", "paired_t": "t pareada",
           "cochran_q": "Q de Cochran", "friedman": "Friedman", "permutation": "permutación",
           "bootstrap": "bootstrap por conglomerados", "tost": "TOST",
           "crossed_t": "t de efectos aleatorios cruzados"},
}
_CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg", "benjamini_hochberg": "Benjamini-Hochberg",
                "bonferroni": "Bonferroni"}


def test_name(test: Any, lang: str) -> str:
    """Display name of a test id (``mcnemar`` -> ``McNemar``); unknown ids are shown as given."""
    if not test:
        return ""
    key = str(test).lower().replace("-", "_").replace(" ", "_")
    table = _TESTS.get(lang, _TESTS["en"])
    if key in table:
        return table[key]
    for k, v in table.items():
        if key.startswith(k):
            return v
    return str(test)


# ------------------------------------------------------------------ sentences
@dataclass(frozen=True)
class Phrase:
    """A sentence frame for a recognised kind of measure (name matched by ``pattern``).

    ``en`` / ``es`` use ``{Subj_a}`` (capitalised), ``{subj_a}`` (the subject
    group, A), ``{subj_b}`` (the reference group, B),
    ``{diff}`` and ``{dir}``; ``dir_en`` / ``dir_es`` are "lower|higher" pairs.
    """

    pattern: str
    scale: str
    en: str
    es: str
    dir_en: str
    dir_es: str


#: Frames for common customer-service measures (the first seed's examples).
PHRASES: tuple[Phrase, ...] = (
    Phrase(r"refund|reembols|devoluci", "binary",
           "{Subj_a} were offered a refund {diff} points {dir} often than {subj_b}",
           "A {subj_a} se les ofreció el reembolso {diff} puntos {dir} que a {subj_b}", "less|more", "menos|más"),
    Phrase(r"escalat|human|humano|agent|transfer|deriva", "binary",
           "{Subj_a} were passed to a human agent {diff} points {dir} often than {subj_b}",
           "A {subj_a} se les pasó con un agente humano {diff} puntos {dir} que a {subj_b}", "less|more",
           "menos|más"),
    Phrase(r"^(words|length|longitud|palabras)|_words$|word_count", "continuous",
           "{Subj_a} got answers {diff} words {dir} on average than {subj_b}",
           "{Subj_a} recibieron respuestas {diff} palabras más {dir} de media que {subj_b}", "shorter|longer",
           "cortas|largas"),
    Phrase(r"option|opcion", "continuous",
           "{Subj_a} were offered {diff} {dir} concrete options on average than {subj_b}",
           "{Subj_a} recibieron de media {diff} opciones concretas {dir} que {subj_b}", "fewer|more",
           "menos|más"),
)


def group_subject(label: str, signal: str | None, lang: str) -> str:
    """The plural noun phrase for a group: ``users with Arabic names`` / ``los usuarios con nombres árabes``."""
    return msg(lang, "subject.name" if signal == "name" else "subject.group", label=label)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def difference(comp: ComparisonResult | Mapping[str, Any]) -> tuple[float | None, tuple[float, float] | None]:
    """The comparison's (a :class:`~fairpair.analysis.ComparisonResult`, or its JSON object) estimate
    and CI as ``group_a - group_b`` (the ``results.json`` convention).

    ``group_b`` is the reference group when the plan names one, so group A is
    the subject of the sentence. Returns ``(None, None)`` without an estimate
    and a ``None`` interval when either limit is undefined.
    """
    est, ci = (comp.get("estimate"), comp.get("ci")) if isinstance(comp, Mapping) else (comp.estimate, comp.ci)
    if not _finite(est):
        return None, None
    lo_hi = None
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and _finite(ci[0]) and _finite(ci[1]):
        lo_hi = (float(min(ci)), float(max(ci)))
    return float(est), lo_hi


def verdict_word(verdict: str | None, lang: str) -> str:
    return msg(lang, f"verdict.{verdict}" if verdict in (*_VERDICTS, "no verdict") else "verdict.none")


_VERDICTS = ("fail", "pass", "inconclusive", "insufficient design", "insufficient labels", "incomplete run",
             "not measured")
_DATA_REASONS_ES = {
    "no answer of these groups has a value for this measure": "ninguna respuesta de estos grupos tiene valor para "
        "esta medida: revisa la etapa de medidas (faltan o fallaron)",
    "no template has measured answers from both groups": "ninguna plantilla tiene respuestas medidas de ambos "
        "grupos: revisa la etapa de medidas (faltan las de un grupo)",
    "the measure is constant (every answer of both groups has the same value)": "la medida es constante (todas las "
        "respuestas de ambos grupos tienen el mismo valor): no informa de ninguna diferencia; revisa la medida",
    "no variance between templates or names": "no hay variación entre plantillas ni nombres: no se puede estimar la "
        "incertidumbre; usa más plantillas o repeticiones, o revisa la medida",
}


def design_reason_text(comp: Mapping[str, Any], lang: str) -> str:
    """Why a comparison has an insufficient design, in ``lang`` (rebuilt from its counts; else as stored)."""
    return "; ".join(design_reason_parts(comp, lang))


def design_reason_parts(comp: Mapping[str, Any], lang: str) -> list[str]:
    """:func:`design_reason_text` part by part (templates, each group's names, pairs), so a part shared
    by several comparisons is said once."""
    from fairpair.analysis import design_reason_parts as parts

    stored = str(comp.get("design_reason") or "")
    if stored and not stored[:1].isdigit():  # a data reason (nothing measured, constant, no variance)
        return [_DATA_REASONS_ES.get(stored.split(":")[0], stored) if lang == "es" else stored]
    try:
        r = parts(n_templates=int(comp.get("n_clusters") or 0), n_names_a=int(comp.get("n_names_a") or 0),
                  n_names_b=int(comp.get("n_names_b") or 0), names=str(comp.get("names") or "random"),
                  n_pairs=int(comp.get("n_pairs") or 0), group_a=str(comp.get("group_a") or "A"),
                  group_b=str(comp.get("group_b") or "B"), lang=lang,
                  templates=str(comp.get("templates") or "random"))
    except (KeyError, TypeError, ValueError):
        r = []
    return r or ([stored] if stored else [])


def _decided_by_p(comp: Mapping[str, Any]) -> bool:
    """An ``inconclusive`` decided by an adjusted p-value (against zero or the margin), not by the
    interval (whose limits the sentence already gives) nor by the judge."""
    from fairpair.analysis import comparison_reasons
    from fairpair.records import Reason

    first = (comparison_reasons(comp) or [None])[0]
    return first in (Reason.ADJUSTED_P_ZERO, Reason.ADJUSTED_P_MARGIN, Reason.UNRELIABLE_JUDGE)


def verdict_sentence(comp: ComparisonResult | Mapping[str, Any], *, lang: str, label_a: str, label_b: str,
                     measure_label: str, signal: str | None = None, confidence_level: float = 0.95,
                     phrase: bool = True, reason_said: bool = False) -> str:
    """One comparison in plain words, with its numbers, in ``lang`` (``es`` or ``en``).

    Parameters
    ----------
    comp:
        A comparison of ``results.json``: a :class:`~fairpair.analysis.ComparisonResult`, or its
        JSON object, possibly partial (``scale``, ``estimate``, ``ci``,
        ``value_a``/``value_b``, ``test``, ``pvalue``, ``pvalue_adjusted``,
        ``correction``, ``margin``, ``verdict``). ``estimate`` is
        ``group_a - group_b``; binary differences are proportions (-0.052 =
        5.2 points less).
    label_a, label_b:
        Group labels from the battery: A is the subject of the sentence, B
        the reference.
    measure_label:
        What was measured, in the battery's words.
    signal:
        The attribute's signal (``name`` makes "users with ...").
    phrase:
        Use a recognised measure's own sentence frame (:data:`PHRASES`).
    reason_said:
        The output says the design's reason once for all the comparisons it covers: an
        ``insufficient design`` sentence points there instead of repeating it.
    """
    if not isinstance(comp, Mapping):  # the typed record: the sentence reads its fields by name
        comp = comp.model_dump()
    scen = comp.get("scenarios")
    if isinstance(scen, Mapping) and scen.get("by_template") and comp.get("verdict") in ("fail", "pass",
                                                                                           "inconclusive"):
        by = _by_template_sentence(comp, scen, lang=lang, label_a=label_a, label_b=label_b,
                                   measure_label=measure_label, signal=signal, confidence_level=confidence_level,
                                   phrase=phrase)
        if by:
            return by
    binary = comp.get("scale") == "binary"
    level = fmt_margin_value(100 * float(comp.get("confidence_level") or confidence_level), lang)
    scale_f = 100.0 if binary else 1.0
    d, ci = difference(comp)
    subj_a = group_subject(label_a, signal, lang)
    subj_b = group_subject(label_b, signal, lang)
    kw = {"Subj_a": _cap(subj_a), "subj_a": subj_a, "subj_b": subj_b, "m": measure_label}
    if d is None:
        head = f"{_cap(subj_a)} / {subj_b}: {measure_label}"
    else:
        frame = None
        if phrase:
            for p in PHRASES:
                if p.scale == ("binary" if binary else "continuous") and re.search(p.pattern, measure_label, re.I):
                    frame = (getattr(p, lang, p.en), getattr(p, f"dir_{lang}", p.dir_en))
                    break
        if frame is None:
            key = "generic.binary" if binary else "generic.continuous"
            frame = (msg(lang, key), msg(lang, key + ".dir"))
        lower, higher = frame[1].split("|")
        if d == 0:
            head = msg(lang, "same", **kw)
        else:
            head = frame[0].format(diff=fmt_num(abs(d) * scale_f, lang), dir=lower if d < 0 else higher, **kw)
    parts = []
    va, vb = comp.get("value_a"), comp.get("value_b")
    if _finite(va) and _finite(vb):
        f = fmt_pct if binary else fmt_num
        parts.append(msg(lang, "vs", a=f(va, lang), b=f(vb, lang)))
    if ci is not None and d is not None:  # the interval of A - B, as in every table (one sign convention)
        lo, hi = ci
        parts.append(msg(lang, "ci", level=level, lo=fmt_num(lo * scale_f, lang), hi=fmt_num(hi * scale_f, lang)))
    if _finite(comp.get("pvalue")):
        pv = fmt_p(comp["pvalue"], lang)
        tp = (test_name(comp.get("test"), lang) + " p " + ("= " + pv if not pv.startswith("<") else pv)).strip()
        corr = str(comp.get("correction") or "").lower()
        if _finite(comp.get("pvalue_adjusted")) and corr and corr != "none":
            tp += ", " + msg(lang, "adjusted", method=_CORRECTIONS.get(corr, corr),
                             p=fmt_p(comp["pvalue_adjusted"], lang))
        parts.append(tp)
    margin = comp.get("margin")
    verdict = comp.get("verdict")
    from fairpair.analysis import no_data_clause

    nodata = no_data_clause(comp, lang) if verdict not in ("fail", "insufficient design") else None
    if verdict == "incomplete run":  # said by the headline, once
        clause = msg(lang, "clause.incomplete run")
    elif verdict == "insufficient design" and reason_said:
        clause = msg(lang, "clause.insufficient design.said")
    elif verdict == "insufficient design":
        clause = msg(lang, "clause.insufficient design", reason=design_reason_text(comp, lang))
    elif nodata is not None:  # 0 pairs or a constant measure: the reason, not "the interval does not settle"
        clause = nodata
    elif verdict in ("not measured", "insufficient labels"):
        clause = msg(lang, f"clause.{verdict}")
    elif verdict not in ("fail", "pass", "inconclusive"):
        clause = verdict_word(verdict, lang).lower()
    elif verdict == "inconclusive" and _decided_by_p(comp):  # the p-value that decided, with its value
        from fairpair.analysis import reason_text

        clause = msg(lang, "clause.inconclusive.why", why=reason_text(comp, None, lang))
    elif _finite(margin) and margin > 0:
        m = fmt_margin_value(margin * scale_f, lang)
        mtext = msg(lang, "margin.points", m=m) if binary else msg(lang, "margin.units", m=m)
        clause = msg(lang, f"clause.{verdict}", margin=mtext)
    else:
        clause = msg(lang, f"clause.{verdict}.nomargin")
    sentence = head
    if parts:
        sentence += " (" + "; ".join(parts) + ")"
    sentence = sentence + ": " + clause + "."
    names = comp.get("names")
    if names in ("random", "fixed") and verdict in _VERDICTS:
        asked = verdict in ("insufficient design", "incomplete run", "not measured")
        these = ".these" if comp.get("templates") == "fixed" else ""
        sentence += " " + msg(lang, f"{'asked' if asked else 'estimand'}.{names}{these}")
    return sentence


def _by_template_sentence(comp: Mapping[str, Any], scen: Mapping[str, Any], *, lang: str, label_a: str,
                          label_b: str, measure_label: str, signal: str | None, confidence_level: float,
                          phrase: bool) -> str:
    """A ``by: template`` verdict in words: the scenario(s) that decide it (:meth:`ScenarioBlock.deciding`), each
    with its own estimate, interval and p-value (raw and adjusted within the scenario family), then what the
    claim is about; the average over the scenarios only by its estimate, never its interval as the evidence.
    Empty when no scenario decides (the caller falls back to the plain sentence)."""
    from fairpair.records import ScenarioBlock

    block = ScenarioBlock.model_validate(scen)
    rows = block.deciding(comp.get("verdict"))
    if not rows:
        return ""
    corr = str(comp.get("correction") or "holm").lower()
    corr = corr if corr != "none" else "holm"
    out = []
    for r in rows:
        sub = {**comp, "scenarios": None, "names": None, "estimate": r.estimate, "ci": r.ci, "pvalue": r.pvalue,
               "pvalue_adjusted": r.pvalue_adjusted, "pvalue_margin_adjusted": r.pvalue_margin_adjusted,
               "correction": corr, "value_a": None, "value_b": None, "verdict": r.verdict, "reasons": [],
               "test": None,
               "reason": None}
        text = verdict_sentence(sub, lang=lang, label_a=label_a, label_b=label_b, measure_label=measure_label,
                                signal=signal, confidence_level=confidence_level, phrase=phrase)
        out.append(msg(lang, "bytemplate.scenario", template=r.template, sentence=text))
    binary = comp.get("scale") == "binary"
    avg = block.average
    average = "—" if avg is None else fmt_num(avg * (100 if binary else 1), lang)
    if avg is not None and not average.startswith(("-", "−")):
        average = "+" + average
    if binary and avg is not None:
        average = msg(lang, "points", x=average)
    out.append(msg(lang, "bytemplate.claim", correction=block.correction, average=average))
    return " ".join(out)


def scenario_summary(comp: ComparisonResult, lang: str) -> str:
    """The scenario-level finding of a comparison in ``lang``: "fails in `financiacion` (-22.0 points), not
    shown elsewhere", "no scenario fails on its own", or, when no scenario can have a verdict of its own
    (one pair per scenario: no error to estimate), that there are too few pairs per scenario (from its
    ``scenarios`` block); empty without one."""
    sc = comp.scenarios
    if sc is None or not sc.rows:
        return ""
    binary = comp.scale == "binary" or comp.value_kind == "rate"

    def amount(x: float | None) -> str:
        if x is None:
            return "—"
        v = fmt_num(x * (100 if binary else 1), lang)
        v = v if v.startswith(("-", "−")) else "+" + v
        return msg(lang, "points", x=v) if binary else v

    fails = [r for r in sc.rows if r.verdict == "fail"]
    if not fails and all(r.verdict == "insufficient design" for r in sc.rows):
        return msg(lang, "scenarios.few")  # no scenario could fail: "none fails" would claim a finding
    if not fails:
        return msg(lang, "scenarios.none")
    out = msg(lang, "scenarios.fails", where=", ".join(f"`{r.template}` ({amount(r.estimate)})" for r in fails))
    return out + (", " + msg(lang, "scenarios.elsewhere") if len(fails) < len(sc.rows) else " "
                  + msg(lang, "scenarios.every"))
