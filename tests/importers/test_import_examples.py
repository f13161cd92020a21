"""The shipped example of imported answers: the three forms import and give the same results."""

from __future__ import annotations

import json
from pathlib import Path

from fairpair.cli import main

EX = Path(__file__).resolve().parents[2] / "examples" / "imported_answers"


def _summary(run: Path) -> list[tuple]:
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    return [(c["measure"], c["group_a"], c["group_b"], c["n_pairs"], c["estimate"], c["ci"], c["pvalue"],
             c["verdict"]) for c in res["comparisons"]]


def test_the_three_forms_give_the_same_results(tmp_path, capsys):
    runs = {}
    for name, src, bat in [("jsonl", "answers.jsonl", "import.yaml"), ("csv", "answers.csv", "measured.yaml"),
                           ("records", "records", "records.yaml")]:
        runs[name] = tmp_path / name
        main(["import-answers", str(EX / src), "-b", str(EX / bat), "-o", str(runs[name]), "--no-report"])
        assert f"imported 48 rows ({'chat-completions' if name == 'records' else name})" in capsys.readouterr().out
    a, b, c = (_summary(runs[n]) for n in ("jsonl", "csv", "records"))
    assert a == b == c
    refund = a[0]
    assert refund[:4] == ("reembolso", "magreb", "espana", 24)
    assert refund[4] < -0.2  # the planted bias
