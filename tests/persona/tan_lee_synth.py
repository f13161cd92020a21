"""Synthetic results in the column layout of Tan & Lee's (2025) public release.

The real result CSVs could not be fetched; this writes files in their exact
layout with planted per-cell effects, so the reanalysis can be checked
against an independent pandas computation written in the tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = [
    "scenario_id", "contextual_dim", "demographic_dim", "power_differential", "sub_persona_context",
    "sub_persona_demog", "sub_persona_final", "res_persona_context", "res_persona_demog", "res_persona_final",
    "scenario", "instruction", "prompt", "response", "final_scenario_id", "cosine_dist_from_no_demog",
    "model_abbrv", "response_non_demog", "score",
]
# the axis names and identity labels as the release could write them (Table 2)
AXES = {
    "Race": ["Caucasian", "African", "Hispanic", "Middle-Eastern", "Asian"],
    "Gender identity": ["Male", "Female", "Non-binary", "Transgender"],
    "Age": ["Young person", "Middle-aged person", "Old person"],
    "Religion": ["Christian", "Muslim", "Buddhist", "Jewish", "Atheist"],
    "Political stance": ["Conservative", "Liberal", "Centrist"],
    "Disability": ["Abled person", "Physically disabled person", "Mentally disabled person"],
    "Nationality": ["Native-born citizen", "Immigrant", "Migrant worker"],
    "Physical appearance": ["Ugly-looking person", "Average-looking person", "Attractive-looking person"],
}
DOMAINS = ["Workplace/Hiring", "School/Education", "Healthcare Access", "Finance/Banking Matters",
           "Political Rights/Government", "Criminal Justice System", "Neighbourhood and Inter-family",
           "Social Media and Information Access", "Housing and Real Estate", "Social Welfare and Public Assistance"]
SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def synthetic_release(models=("gemma-2", "qwen-2"), *, seed: int = 20250301, extra_gender=()) -> pd.DataFrame:
    """2 models x 100 scenes x 112 conditions (+ 100 baselines per model included in the 112).

    Planted: each SUB x RES cell has its own shift of the cosine distance and
    of the win-rate probabilities, larger under a power disparity for the
    first model; each scene has its own level. ``extra_gender`` adds
    identities outside Table 2 to the gender axis (as generated_prompts.csv had).
    """
    rng = np.random.default_rng(seed)
    scenes = [(d, p, k) for p in (1, 0) for d in DOMAINS for k in range(1, 6)]
    rows = []
    for mi, model in enumerate(models):
        cell_shift = {(ax, s, r): rng.normal(0, 0.02) for ax, ids in AXES.items() for s in ids for r in ids}
        for fid, (dom, p, k) in enumerate(scenes, start=1):
            scene_level = 0.08 + rng.normal(0, 0.01)
            text = f"SUB and RES meet ({dom}, {k})."
            base = {"scenario_id": k, "contextual_dim": dom, "power_differential": p, "scenario": text,
                    "instruction": "Adopt the persona of Blake.", "final_scenario_id": fid, "model_abbrv": model,
                    "sub_persona_context": "calm", "res_persona_context": "busy", "response_non_demog": '"Hi."'}
            rows.append({**base, "demographic_dim": None, "sub_persona_demog": None, "res_persona_demog": None,
                         "sub_persona_final": "Alex is calm.", "res_persona_final": "Blake is busy.",
                         "prompt": text, "response": '"Hi."', "cosine_dist_from_no_demog": 0.0, "score": np.nan})
            for ax, ids in AXES.items():
                pairs = [(s, r) for s in ids for r in ids]
                if ax == "Gender identity":
                    more = list(ids) + list(extra_gender)
                    pairs = [(s, r) for s in more for r in more]
                for s, r in pairs:
                    shift = cell_shift.get((ax, s, r), 0.03) * (1.6 if (p == 1 and mi == 0) else 1.0)
                    cos = max(0.0, scene_level + shift + rng.normal(0, 0.015))
                    pr = 1 / (1 + np.exp(-(shift * 40)))
                    score = SCORES[rng.binomial(4, pr)]
                    rows.append({**base, "demographic_dim": ax, "sub_persona_demog": s, "res_persona_demog": r,
                                 "sub_persona_final": f"a {s} who is calm", "res_persona_final": f"a {r} who is busy",
                                 "prompt": f'{text}\n"quoted", with commas', "response": f'"Hello, {s}."',
                                 "cosine_dist_from_no_demog": round(cos, 6), "score": score})
    return pd.DataFrame(rows, columns=COLUMNS)
