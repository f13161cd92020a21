"""The labelling page's server (fairpair.measures._labelpage) through aiohttp's test client: blind
(no name, group, target, template or judge score in the page), labels stored as given, skip, undo,
a double submit stored once, two raters, resume in a new session, and the sample drawn once."""

from __future__ import annotations

import asyncio
import re

import pytest
from aiohttp.test_utils import TestClient, TestServer
from tests.measures.labelling import NAMES, judged_run

from fairpair.measures._labelpage import label_app, open_label_session
from fairpair.store import Store


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return judged_run(tmp_path_factory.mktemp("labelpage"))


def _drive(session, steps):
    """Run ``steps(client)`` (a coroutine function) against the page's app."""
    async def go():
        async with TestClient(TestServer(label_app(session))) as client:
            return await steps(client)
    return asyncio.run(go())


def _order(html: str) -> int:
    return int(re.search(r'name="order" value="(\d+)"', html).group(1))


def test_the_page_is_blind_and_stores_each_label_as_given(run_dir):
    session = open_label_session(run_dir, n=10, seed=3)
    try:
        assert session.sample.design == "uncertainty" and len(session.sample) == 10
        with Store.open(run_dir, create=False, readonly=True) as s:
            judged = {(m.target, m.case_id): m.value for m in s.measurements("tone.courtesy")}

        async def steps(client):
            r = await client.get("/")
            assert "Your name" in await r.text()
            r = await client.get("/", params={"rater": "ann"})
            assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
            html = await r.text()
            first = session.sample.answers[0]
            assert _order(html) == 0 and "0 labelled, 0 skipped, of 10" in html
            assert "[MASK]" in html and not any(n in html for n in NAMES)
            for secret in ("espana", "magreb", "origen", "mock", first.case_id, "t_roto", "t_cita", "t_pago",
                           f"{judged[(first.target, first.case_id)]}"):
                assert secret not in html, secret
            r = await client.post("/label", data={"rater": "ann", "order": "0", "value": "5.0"},
                                  allow_redirects=False)
            assert r.status == 303
            r = await client.post("/label", data={"rater": "ann", "order": "0", "value": "1.0"})  # a double key press
            assert _order(await r.text()) == 1
            r = await client.post("/skip", data={"rater": "ann", "order": "1"})
            html = await r.text()
            assert _order(html) == 2 and "1 labelled, 1 skipped, of 10" in html
            r = await client.post("/undo", data={"rater": "ann"})  # undo the skip: answer 1 again
            assert _order(await r.text()) == 1
            r = await client.post("/label", data={"rater": "ann", "order": "1", "value": "3.0"})
            assert r.status == 400  # 3 is no choice of a yes/no question (1 = no, 5 = yes)
            r = await client.post("/label", data={"rater": "bob", "order": "0", "value": "1.0"})
            html = await r.text()
            assert _order(html) == 1 and "1 label(s) by other raters" in html
            r = await client.post("/undo", data={"rater": "cy"})
            assert "nothing to undo" in await r.text()
            r = await client.post("/label", data={"rater": "eve", "order": "2", "value": "5.0"},
                                  headers={"Origin": "http://evil.example"})  # a cross-site form
            assert r.status == 403
            # a sandboxed frame's origin; a cross-site post
            for headers in ({"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
                r = await client.post("/skip", data={"rater": "eve", "order": "2"}, headers=headers)
                assert r.status == 403, headers
            r = await client.get("/", params={"rater": "eve"}, headers={"Host": "evil.example"})  # DNS rebinding
            assert r.status == 403
        _drive(session, steps)
        ann = session.store.labels("tone.courtesy", rater="ann")
        assert [(x.target, x.case_id, x.value, x.source) for x in ann] == [
            (session.sample.answers[0].target, session.sample.answers[0].case_id, 5.0, "page")]
        assert [x.value for x in session.store.labels("tone.courtesy", rater="bob")] == [1.0]
        assert session.store.label_actions("tone.courtesy", "eve") == []  # the refused requests stored nothing
    finally:
        session.close()
    # a new session (the server restarted): the same sample, each rater resumes where they stopped
    again = open_label_session(run_dir, n=50, seed=9)
    try:
        assert again.sample == session.sample
        assert again.notes and "--n, --seed ignored" in again.notes[0]
        assert again.next_answer("ann").order == 1 and again.next_answer("bob").order == 1
        assert again.next_answer("dee").order == 0
        assert again.progress("ann") == {"labelled": 1, "skipped": 0, "total": 10, "others": 1}
    finally:
        again.close()


def test_the_conversation_is_masked_turn_by_turn(run_dir):
    session = open_label_session(run_dir)
    try:
        pago = next(a for a in session.sample.answers if session.store.case(a.case_id).template == "t_pago")
        conv = session.conversation(pago.target, pago.case_id)
        assert [m["role"] for m in conv] == ["system", "user", "assistant", "user", "assistant"]
        assert conv[0]["content"] == "Eres el asistente de la tienda; el cliente es [MASK]."
        assert conv[3]["content"] == "Me cobrasteis dos veces."
        assert conv[-1]["content"] and not any(n in m["content"] for m in conv for n in NAMES)
    finally:
        session.close()


def test_an_unknown_measure_lists_the_rows(run_dir):
    from fairpair.errors import FairpairError

    with pytest.raises(FairpairError, match="several; name one") as e:
        open_label_session(run_dir, measure="tone")
    assert "tone.courtesy, tone.condescension, tone.distrust" in e.value.hint


def test_llm_extract_rows_and_yes_no_words(tmp_path, run_dir):
    import json

    from fairpair.battery import load_battery
    from fairpair.measures._labelsample import label_measure

    b = {"schema_version": 1, "name": "x", "language": "en", "seed": 1,
         "attributes": {"origin": {"signal": "name", "slot": "name", "groups": {
             "a": {"variants": ["Emily"]}, "b": {"variants": ["Lakisha"]}}}},
         "templates": [{"id": "t", "turns": ["I am {name}."]}],
         "designs": [{"kind": "counterfactual", "attribute": "origin"}], "target": {"kind": "mock"},
         "measures": {"decision": {"kind": "llm_extract", "instructions": "Does the reply grant the refund?",
                                   "schema": {"type": "object", "properties": {
                                       "refund": {"type": "boolean", "description": "the refund is granted"},
                                       "stars": {"type": "integer", "minimum": 1, "maximum": 3},
                                       "route": {"type": "string", "enum": ["a", "b"]}}}}}}
    p = tmp_path / "x.yaml"
    p.write_text(json.dumps(b), encoding="utf-8")
    battery = load_battery(p).battery
    refund = label_measure(battery, None)  # no judge measure: the first extract row
    assert (refund.row, refund.description, refund.question) == ("decision.refund", "the refund is granted",
                                                                "Does the reply grant the refund?")
    assert refund.choices() == [("0", 0.0, "no"), ("1", 1.0, "yes")]
    assert [c[1] for c in label_measure(battery, "decision.stars").choices()] == [1.0, 2.0, 3.0]
    from fairpair.errors import FairpairError

    with pytest.raises(FairpairError) as e:  # a categorical property has no scale to label on
        label_measure(battery, "decision.route")
    assert e.value.hint == "one of: decision.refund, decision.stars"
    session = open_label_session(run_dir)  # a Spanish yes/no judge: no / sí, stored as the lowest / highest level
    try:
        assert session.measure.choices() == [("0", 1.0, "no"), ("1", 5.0, "sí")]
    finally:
        session.close()


def test_new_sample_is_drawn_beside_the_first_and_keeps_every_label(tmp_path_factory):
    """`fairpair label RUN --new-sample`: another sample stored as page-2 (the next seed), shown from then on;
    the first sample and its labels stay, and a rater is not shown an answer they labelled already."""
    from fairpair.measures._labelpage import LABEL_PORT

    run = judged_run(tmp_path_factory.mktemp("newsample"))
    first = open_label_session(run, n=6, seed=4)
    try:
        labelled = [a for a in first.sample.answers[:3]]
        for a in labelled:
            assert first.give("ann", a.order, 5.0)
    finally:
        first.close()
    again = open_label_session(run, n=20)  # no --new-sample: the stored sample, and a note saying how
    try:
        assert again.sample.name == "page" and len(again.sample) == 6
        assert any("--new-sample" in n for n in again.notes)
    finally:
        again.close()
    new = open_label_session(run, n=20, new_sample=True)
    try:
        assert (new.sample.name, new.sample.seed, len(new.sample)) == ("page-2", 5, 20)
        assert any("'page-2'" in n and "kept" in n for n in new.notes)
        done = {(a.target, a.case_id) for a in labelled}
        nxt = new.next_answer("ann")
        assert nxt is not None and (nxt.target, nxt.case_id) not in done
    finally:
        new.close()
    latest = open_label_session(run)
    try:
        assert latest.sample.name == "page-2"
    finally:
        latest.close()
    with Store.open(run, create=False, readonly=True) as s:
        assert [x.name for x in s.label_samples("tone.courtesy")] == ["page", "page-2"]
        assert {(x.target, x.case_id) for x in s.labels("tone.courtesy", rater="ann")} == done
    import inspect

    from fairpair.cli._measures import label

    assert LABEL_PORT != 8765  # the docs' example chatbots listen on 8765
    assert inspect.signature(label).parameters["port"].default == LABEL_PORT
