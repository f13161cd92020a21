"""A tiny battery whose prompts are counted by hand, and a price table for it."""

from __future__ import annotations

import textwrap

import pytest

#: system "Be brief." (9 characters); turn "Hi, I am Anna." (14) / "Hi, I am Bea." (13): 45 characters a repetition
TINY = textwrap.dedent("""\
    schema_version: 1
    name: tiny
    language: en
    repetitions: 400
    attributes:
      origin:
        signal: name
        slot: name
        groups:
          a: {variants: [Anna]}
          b: {variants: [Bea]}
    templates:
      - id: t1
        system: "Be brief."
        turns: ["Hi, I am {name}."]
    designs:
      - kind: counterfactual
        attribute: origin
    target: {kind: openai, model: m-1, base_url: "http://127.0.0.1:9/v1", api_key_env: NO_SUCH_KEY, max_tokens: 100}
    """)

PRICES = textwrap.dedent("""\
    currency: EUR
    confirm_above: 0.5
    models:
      m-1:
        live: {input: 2, output: 10}
        batch: {input: 1.0, output: 5.0}
        source: "made up for the tests"
    """)


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY, encoding="utf-8")
    return path


@pytest.fixture
def prices(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES, encoding="utf-8")
    return path
