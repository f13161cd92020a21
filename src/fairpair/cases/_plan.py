"""Design size of a battery: what ``fairpair plan`` prints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from math import comb
from typing import Any

from fairpair.battery import LoadedBattery
from fairpair.cases._expand import Expansion, expand

__all__ = ["Plan", "plan", "CHARS_PER_TOKEN", "one_repetition"]

#: Rough prompt-token estimate: characters / 4 (OpenAI's rule of thumb for English;
#: Spanish runs slightly higher, so treat it as an order of magnitude).
CHARS_PER_TOKEN = 4.0


@dataclass
class Plan:
    """Sizes of a battery's design.

    ``designs`` has, per design id: kind, templates, repetitions, groups (or
    cells), variants per group, conversations, matched sets, ``pairs`` (matched
    pairs available to any two-group comparison), ``comparisons`` (how many
    comparisons each measure gets under the analysis plan) and, for the
    two-party design, ``cells`` and ``baselines``.
    """

    battery: str
    templates: int
    repetitions: int
    conversations: int
    prompt_tokens: int
    user_turns: int
    targets: int
    designs: dict[str, dict[str, Any]] = field(default_factory=dict)
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    measures: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Conversations x user turns x targets (calls to the system under test)."""
        return self.user_turns * max(self.targets, 1)

    def as_dict(self) -> dict[str, Any]:
        return {"battery": self.battery, "templates": self.templates, "repetitions": self.repetitions,
                "conversations": self.conversations, "targets": self.targets, "requests": self.requests,
                "prompt_tokens_estimate": self.prompt_tokens, "designs": self.designs,
                "exclusions": self.exclusions, "measures": self.measures}


def _comparisons(loaded: LoadedBattery, attribute: str, design_id: str, n_groups: int) -> int:
    plan = loaded.battery.analysis
    declared = [c for c in plan.comparisons if c.attribute == attribute
                and (c.design is None or c.design == design_id)]
    if not declared:
        return comb(n_groups, 2)
    c = declared[0]
    k = n_groups if c.groups == "all_pairs" else len(c.groups)
    return (k - 1) if c.reference else comb(k, 2)


def one_repetition(loaded: LoadedBattery) -> tuple[LoadedBattery, dict[str, int]]:
    """The battery with every design at one repetition, and each design id's real repetitions."""
    b = loaded.battery
    reps = {b.design_id(i): (d.repetitions or b.repetitions) for i, d in enumerate(b.designs)}
    designs = [d.model_copy(update={"repetitions": None}) for d in b.designs]
    one = b.model_copy(update={"repetitions": 1, "designs": designs})
    return LoadedBattery(one, loaded.path, loaded.located, loaded.sha256, loaded.selection), reps


def plan(loaded: LoadedBattery) -> Plan:
    """Count what would be sent, arithmetically in the repetitions.

    One repetition of every design is expanded (streaming) and its counts are
    multiplied by the design's repetitions: repetitions differ only in their
    seed, so the conversations, matched sets and requests are exact, and
    ``plan`` answers at once for 10^9 repetitions. The prompt-token figure is
    an estimate (characters / :data:`CHARS_PER_TOKEN`).
    """
    b = loaded.battery
    one, reps_of = one_repetition(loaded)
    exp = Expansion(b.name, loaded.sha256)
    chars: dict[str, int] = {}
    turns: dict[str, int] = {}
    tools = b.all_tools()
    tools_chars = len(json.dumps(tools, ensure_ascii=False)) if tools else 0
    for case in expand(one, exp):
        # what is sent: the messages (the context is written into them by its channels) and the tools
        base = sum(len(m["content"]) for m in case.messages) + tools_chars
        acc = 0
        for t in case.turns:  # each turn resends the conversation so far
            acc += len(t)
            chars[case.design] = chars.get(case.design, 0) + base + acc
            turns[case.design] = turns.get(case.design, 0) + 1
    for did, st in exp.designs.items():
        r = reps_of.get(did, 1)
        st.update(repetitions=r, cases=st["cases"] * r, matched_sets=st["matched_sets"] * r)
    n = sum(st["cases"] for st in exp.designs.values())
    total_chars = sum(c * reps_of.get(d, 1) for d, c in chars.items())
    total_turns = sum(c * reps_of.get(d, 1) for d, c in turns.items())
    designs: dict[str, dict[str, Any]] = {}
    for di, d in enumerate(b.designs):
        did = b.design_id(di)
        s = dict(exp.designs.get(did, {}))
        def comparisons(attribute: str, n: int, did: str = did) -> int:
            return _comparisons(loaded, attribute, did, n)
        s.update(d.plan(b, s, comparisons))
        designs[did] = s
    reps = sorted({(d.repetitions or b.repetitions) for d in b.designs})
    return Plan(battery=b.name, templates=len(b.templates), repetitions=reps[0] if len(reps) == 1 else max(reps),
                conversations=n, prompt_tokens=int(total_chars / CHARS_PER_TOKEN), user_turns=total_turns,
                targets=len(b.target_specs()), designs=designs, exclusions=exp.exclusions,
                measures=sorted(b.measures))
