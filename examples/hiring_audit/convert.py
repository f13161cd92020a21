"""Convert a published resume-ranking audit (one JSON record per request) into fairpair's answer rows.

The published layout (``make_sample.py`` writes a sample of it): per line,
``model``, ``job``, ``names`` (the eight candidates in the order the prompt
showed them), ``demographics`` (the group of each name, same order),
``response`` (the answer text) and ``extra_sample`` (true for the samples
drawn beyond the published 1,000 per job and model, which the published
table leaves out). Adapt the field names below to your file.

Each record becomes one interchange row (``fairpair answers-schema``) of a
ranking design: the request is the matched set, the job the template, the
model the target, and ``ranking.candidates`` the names with their groups in
the order shown; fairpair's ``ranking`` measure reads the answer text.

Usage::

    python examples/hiring_audit/convert.py published.jsonl answers.jsonl [--keep-extra]
    fairpair import-answers answers.jsonl --battery examples/hiring_audit/import.yaml --out runs/hiring
    fairpair report runs/hiring
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

# Where each field lives in a published record: change these to fit another file.
MODEL, JOB, NAMES, GROUPS, ANSWER, EXTRA = "model", "job", "names", "demographics", "response", "extra_sample"


def _id(text: str) -> str:
    """A fairpair id (letters, digits, '_', '.', '-') from a model or job name."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", text.strip()) or "_"


def convert(src: Path, dst: Path, keep_extra: bool = False) -> tuple[int, int]:
    """Write one row per request of ``src`` to ``dst``; returns (rows written, extra samples left out)."""
    written = skipped = 0
    with src.open(encoding="utf-8") as f, dst.open("w", encoding="utf-8") as out:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec.get(EXTRA) and not keep_extra:
                skipped += 1
                continue
            names, groups = rec[NAMES], rec[GROUPS]
            if len(names) != len(groups):
                raise SystemExit(f"{src}:{line_no}: {len(names)} names but {len(groups)} groups")
            model, job = _id(rec[MODEL]), _id(rec[JOB])
            row = {"set": f"{model}/{job}/{line_no}", "template": job, "target": model, "model": rec[MODEL],
                   "ranking": {"candidates": [{"name": n, "group": g} for n, g in zip(names, groups)]},
                   "answer": rec[ANSWER]}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    return written, skipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="the published records (JSON Lines)")
    ap.add_argument("dst", type=Path, help="the interchange rows to write (JSON Lines)")
    ap.add_argument("--keep-extra", action="store_true", help="keep the extra samples the published table leaves out")
    args = ap.parse_args()
    written, skipped = convert(args.src, args.dst, args.keep_extra)
    print(f"{written} rows -> {args.dst}" + (f" ({skipped} extra samples left out)" if skipped else ""))


if __name__ == "__main__":
    main()
