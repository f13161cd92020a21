"""``fairpair label`` in a real browser: two raters label 20 answers by keyboard, the server is killed
(SIGKILL) in the middle and started again, the first rater resumes where they stopped, the labels
in the store are exactly the keys pressed (an undo by Backspace and a skip and its undo included),
and ``analyze`` reads them (the judge's error by group is the one these labels give). The page
makes no request but to itself and logs no error (its Content-Security-Policy would log any
refused load).

Driven by Playwright on Debian's ``chromium`` through ``executable_path`` (the fixture pattern of
``tests/report/test_first_screen.py``: skipped without a browser, failed under ``CI=true``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.measures.labelling import judged_run
from tests.report.test_first_screen import ARGS, CHROMIUM, _browser

from fairpair.analysis import analyze_run
from fairpair.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MEASURE = "tone.courtesy"


def _serve(run_dir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """``fairpair label RUN --port 0`` in a process of its own; returns it and the URL it prints."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""), "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "fairpair.cli", "label", str(run_dir), "--port", "0",
                             "--measure", MEASURE, *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError("the page did not print its URL:\n" + "".join(seen))


def _order(page) -> int:
    return int(page.locator('input[name="order"]').first.get_attribute("value"))


def _press(page, key: str) -> None:
    """Press ``key`` and wait for the page the form's POST redirects to."""
    with page.expect_navigation():
        page.keyboard.press(key)


def _label(page, keys: list[str], given: dict[int, float]) -> None:
    """Label the answers shown by pressing each key (``0`` no -> 1.0, ``1`` yes -> 5.0)."""
    for k in keys:
        given[_order(page)] = {"0": 1.0, "1": 5.0}[k]
        _press(page, k)


def test_two_raters_label_by_keyboard_through_a_killed_server(tmp_path):
    sync_playwright = _browser()
    run_dir = judged_run(tmp_path)
    requests: list[str] = []
    errors: list[str] = []
    ann: dict[int, float] = {}
    bob: dict[int, float] = {}
    proc, url = _serve(run_dir, "--n", "12", "--seed", "4")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                page = browser.new_page()
                page.on("request", lambda r: requests.append(r.url))
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.goto(url)
                page.fill("#rater-name", "ann")
                with page.expect_navigation():
                    page.keyboard.press("Enter")
                assert page.locator("#rater").inner_text() == "ann" and _order(page) == 0
                _label(page, ["1", "0", "1"], ann)
                _press(page, "1")  # a fourth label, undone by Backspace: the same answer comes back
                _press(page, "Backspace")
                assert _order(page) == 3
                _press(page, "s")  # a skip, then undone with u
                _press(page, "u")
                _label(page, ["0", "0", "1"], ann)
                assert "6 labelled, 0 skipped, of 12" in page.locator("#progress").inner_text()

                proc.kill()  # SIGKILL: nothing is flushed or closed
                proc.wait(timeout=30)
                proc, url = _serve(run_dir)
                page.goto(url + "?rater=ann")  # resumes at the first answer ann has not labelled
                assert _order(page) == 6
                assert "6 labelled, 0 skipped, of 12" in page.locator("#progress").inner_text()
                _label(page, ["1", "1", "0", "1"], ann)

                page.goto(url + "?rater=bob")
                assert _order(page) == 0 and "10 label(s) by other raters" in page.locator("#progress").inner_text()
                _label(page, ["0", "1", "0", "1", "0", "1", "0", "1", "1", "1"], bob)
                assert "10 labelled, 0 skipped, of 12" in page.locator("#progress").inner_text()
            finally:
                browser.close()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert len(ann) == len(bob) == 10
    assert all(u.startswith(url.split("/?")[0].rsplit(":", 1)[0]) for u in requests), requests
    assert errors == []
    with Store.open(run_dir, create=False, readonly=True) as s:
        sample = s.label_sample(MEASURE)
        assert len(sample) == 12 and sample.seed == 4 and sample.design == "uncertainty"
        for rater, given in (("ann", ann), ("bob", bob)):
            stored = {(x.target, x.case_id): x.value for x in s.labels(MEASURE, rater=rater)}
            want = {(sample.answers[o].target, sample.answers[o].case_id): v for o, v in given.items()}
            assert stored == want, rater
        assert all(x.source == "page" for x in s.labels(MEASURE))
        undone = [a for a in s.label_actions(MEASURE, "ann") if a.value is None]
        assert undone == []  # the skip was withdrawn
        judged = {m.case_id: float(m.value) for m in s.measurements(MEASURE)}
        group = {c.id: c.groups["origen"] for c in s.iter_cases()}
    # analyze reads these labels: 10 answers, each labelled by both raters (their mean), too few to correct
    c = next(c for c in analyze_run(run_dir).comparisons if c.measure == MEASURE)
    lc = c.label_correction
    assert lc is not None and lc.n_labels == 10 and lc.n_labels_a + lc.n_labels_b == 10
    assert "insufficient labels" in c.reasons, (c.verdict, c.reasons, c.reason)
    human = {sample.answers[o].case_id: (ann[o] + bob[o]) / 2 for o in ann}
    pi = {cid: p for (_, cid), p in sample.labelled_probabilities((sample.answers[o].target, sample.answers[o].case_id)
                                                              for o in ann).items()}
    for g, err in ((c.group_a, lc.judge_error_a), (c.group_b, lc.judge_error_b)):  # judge minus human, by group,
        mine = [((judged[k] - v) / pi[k], 1 / pi[k]) for k, v in human.items() if group[k] == g]  # weighted 1/pi
        assert mine and err == pytest.approx(sum(e for e, _ in mine) / sum(w for _, w in mine), abs=1e-9), g
