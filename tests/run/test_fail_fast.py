"""A broken target fails fast and loudly (issue 14, point 1): preflight, circuit breaker, error summary,
``fairpair check`` and ``fairpair status``."""

from __future__ import annotations

import time

import pytest

from fairpair.run._preflight import CircuitBreaker, CircuitOpen, error_kind, summarize_errors
from fairpair.testing import openai_target, serve_json, serve_openai, write_battery
from run_helpers import refused_port, rows, run_cli

NAMES = {"a": ["Lucía", "Ana"], "b": ["Fátima", "Aisha"]}  # 2 templates x 4 names = 8 cases


@pytest.fixture
def cli(capsys):
    """``fairpair ARGS`` in-process: (exit code, stdout and stderr as printed, one after the other)."""

    def run(*args):
        code, out, err = run_cli(args, capsys, collapse=False)
        return code, out + err

    return run


def test_refused_port_stops_at_the_first_case_with_exit_2(tmp_path, cli):
    b = write_battery(tmp_path, openai_target(f"http://127.0.0.1:{refused_port()}/v1"), names=NAMES)
    t0 = time.monotonic()
    code, out = cli("run", b, "--out", tmp_path / "run", "-q")
    took = time.monotonic() - t0
    assert code == 2
    assert "the first case failed, so nothing else was sent" in out
    # aiohttp's ClientConnectorError, as the openai target reports it
    assert "connection error: ClientConnectorError" in " ".join(out.split()) and "unreachable" in out
    assert "`fairpair check BATTERY` tries one case; --no-preflight skips this check" in " ".join(out.split())
    assert took < 10, took
    # one failure stored as data (the other 7 cases never sent), no report written
    assert rows(tmp_path / "run", "SELECT status, COUNT(*) FROM responses GROUP BY status") == [("failed", 1)]
    assert not (tmp_path / "run" / "report").exists()
    # status tells what happened and what is left
    code, out = cli("status", tmp_path / "run")
    assert code == 0
    assert "0/8 answered, 1 failed, 7 not sent yet" in out
    assert "1 x TargetError: connection error, e.g." in out and "ClientConnectorError" in " ".join(out.split())
    assert "preflight_failed x 1" in out
    assert f"fairpair run {b} --out {tmp_path / 'run'}" in out


def test_rejected_key_is_reported_as_credentials(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("FP_TEST_KEY", "wrong-key-123456")
    with serve_openai(api_key="right-key-abcdef") as server:
        b = write_battery(tmp_path, openai_target(server.base_url, api_key_env="FP_TEST_KEY"), names=NAMES)
        code, out = cli("run", b, "--out", tmp_path / "run", "-q")
        n_requests = len(server.received)
    assert code == 2
    assert "HTTP 401" in out and "rejected the credentials" in out
    assert "wrong-key-123456" not in out
    assert n_requests == 1  # 401 is not retried, and nothing else was sent


def test_wrong_reply_path_is_reported_after_one_request(tmp_path, cli):
    with serve_json(lambda req: (200, {"answer": {"text": "hola"}})) as server:
        target = {"kind": "http", "url": server.url + "/chat", "body": {"q": "{{last_user_message}}"},
                  "reply_path": "$.reply.text"}
        b = write_battery(tmp_path, target, names=NAMES)
        code, out = cli("check", b)
        assert code == 2 and "reply_path $.reply.text matched nothing" in out
        assert "could not be read" in out
        code, out = cli("run", b, "--out", tmp_path / "run", "-q")
        n_requests = len(server.received)
    assert code == 2 and "reply_path" in out
    assert n_requests == 2  # one for check, one for the run's preflight


def test_preflight_answer_is_kept_and_not_sent_again(tmp_path, cli):
    with serve_openai() as server:
        b = write_battery(tmp_path, openai_target(server.base_url), names=NAMES)
        code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--no-report")
        bodies = [r.body for r in server.received]
    assert code == 0, out
    assert len(bodies) == 8 and len(set(bodies)) == 8
    assert rows(tmp_path / "run", "SELECT status, COUNT(*) FROM responses GROUP BY status") == [("ok", 8)]


def test_circuit_breaker_stops_after_n_identical_failures(tmp_path, cli):
    seen = []

    def handler(req):
        seen.append(req)
        if len(seen) == 1:
            return 200, {"reply": "Hola, lamento lo ocurrido."}
        return 403, {"error": "key revoked"}

    with serve_json(handler) as server:
        target = {"kind": "http", "url": server.url + "/chat", "body": {"q": "{{last_user_message}}"},
                  "reply_path": "$.reply"}
        b = write_battery(tmp_path, target, names=NAMES, templates=4)  # 16 cases
        code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--concurrency", "1",
                        "--max-consecutive-failures", "3")
    assert code == 2
    assert "3 cases in a row failed with the same error, so the run stopped" in out
    assert "HTTP 403" in out and "--max-consecutive-failures" in out
    assert rows(tmp_path / "run", "SELECT status, COUNT(*) FROM responses GROUP BY status ORDER BY status") == \
        [("failed", 3), ("ok", 1)]
    assert len(seen) == 4
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM events WHERE kind='circuit_open'") == [(1,)]


def test_end_of_run_summary_lists_error_kinds_with_counts_and_an_example(tmp_path, cli):
    def handler(req):
        body = req.json()
        if "Fátima" in body["q"]:
            return 400, {"error": "bad request for this customer"}
        return 200, {"reply": "Hola."}

    with serve_json(handler) as server:
        target = {"kind": "http", "url": server.url + "/chat", "body": {"q": "{{last_user_message}}"},
                  "reply_path": "$.reply"}
        b = write_battery(tmp_path, target, names=NAMES, templates=3)  # 12 cases, 3 with Fátima
        code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--no-report", "--max-consecutive-failures", "0")
    assert code == 0, out
    assert "target http: 9/12 answered, 3 failed" in out
    assert "target http: 3 cases without an answer; errors by kind:" in out
    line = next(x for x in out.splitlines() if " x " in x and "e.g." in x)
    assert line.split(" x ")[0].strip() == "3" and "HTTP 400" in line


def test_check_answers_with_one_case_and_stores_nothing(tmp_path, cli):
    b = write_battery(tmp_path, {"kind": "mock"}, names=NAMES)
    code, out = cli("check", b)
    assert code == 0, out
    assert "ok target mock (mock) answered case" in out
    assert not any(tmp_path.glob("**/store.sqlite"))
    b2 = write_battery(tmp_path / "x", openai_target(f"http://127.0.0.1:{refused_port()}/v1"), names=NAMES)
    code, out = cli("check", b2)
    assert code == 2 and "unreachable" in out
    # the hint of `run`'s preflight sent the user to `fairpair check`, the command just run, and to
    # --no-preflight, which check does not have; check's own says how to see the request instead
    assert ("the target is unreachable (check url / base_url, and that the server is running); "
            "`fairpair run BATTERY --dry-run` prints the exact request, sending nothing") in " ".join(out.split())
    assert "fairpair check BATTERY" not in out and "--no-preflight" not in out


def test_error_kind_and_summary():
    assert error_kind("ConnectError: cannot connect to 127.0.0.1:9") == "ConnectError"
    assert error_kind("TargetError (HTTP 500): boom") == "TargetError (HTTP 500)"
    assert error_kind("TargetError: connection error: ConnectError: x") == "TargetError: connection error"
    assert error_kind("") == "unknown error"
    # a python target's module:function is one name, not two clauses (the kind was "TargetError: bot")
    assert error_kind("TargetError: bot:answer raised RuntimeError: backend down") == \
        "TargetError: bot:answer raised RuntimeError"
    assert error_kind("TargetError: pkg.mod:reply raised ConnectionError: peer reset") == \
        "TargetError: pkg.mod:reply raised ConnectionError"
    errs = ["A: 1", "B: 1", "B: 2", "C: 1", "A: 2", "B: 3"]
    s = summarize_errors(errs, top=2)
    assert [(k.kind, k.count, k.example) for k in s] == [("B", 3, "B: 1"), ("A", 2, "A: 1")]


def test_circuit_breaker_counts_only_consecutive_identical_failures():
    br = CircuitBreaker(3, target="t")
    br.failure("A: x")
    br.failure("A: y")
    br.success()
    br.failure("A: x")
    br.failure("A: x")
    br.failure("B: other kind")  # a new kind restarts the count
    br.failure("B: again")
    with pytest.raises(CircuitOpen) as ei:
        br.failure("B: third")
    assert "3 cases in a row" in ei.value.message and "B: third" in ei.value.message
    assert ei.value.exit_code == 2


def test_a_resumed_run_with_an_edited_template_warns(tmp_path, cli):
    import json

    b = write_battery(tmp_path, {"kind": "mock"}, names=NAMES)
    code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--no-report")
    assert code == 0 and "warning" not in out
    data = json.loads(b.read_text(encoding="utf-8"))
    data["templates"][0]["turns"] = ["Hola, soy {nombre}. Otra pregunta distinta."]
    b.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--no-report")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "warning: the battery changed since this run directory was started: 4 new cases were added beside the 8 " \
           "stored before" in flat
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM events WHERE kind='cases_added'") == [(1,)]


def test_an_openai_server_answering_another_shape_fails_the_preflight(tmp_path, cli):
    with serve_json(lambda req: (200, {"foo": 1})) as server:
        b = write_battery(tmp_path, openai_target(server.base_url), names=NAMES)
        code, out = cli("run", b, "--out", tmp_path / "run", "-q")
        n = len(server.received)
    assert code == 2
    assert "malformed response: no choices" in out and "could not be read" in out
    assert n <= 3  # the preflight's tries only: nothing else was sent


def test_a_run_resumed_with_fewer_repetitions_still_completes(tmp_path, cli):
    """Newcomer walk: a run stopped part-way, resumed with the battery edited to fewer repetitions, warned
    that the recorded battery is kept, yet sent only the edited battery's cases: the recorded repetitions
    beyond stayed unanswered and `status` asked to resume with the same battery, forever. The recorded
    battery's every stored case is now sent."""
    import json

    broken = {"on": True}

    def handler(req):
        if broken["on"]:
            return 403, {"error": "key revoked"}
        return 200, {"reply": "Hola, lamento lo ocurrido."}

    with serve_json(handler) as server:
        target = {"kind": "http", "url": server.url + "/chat", "body": {"q": "{{last_user_message}}"},
                  "reply_path": "$.reply"}
        b = write_battery(tmp_path, target, names=NAMES, repetitions=2)  # 16 cases
        code, out = cli("run", b, "--out", tmp_path / "run", "-q", "--concurrency", "1", "--no-preflight",
                        "--max-consecutive-failures", "3", "--no-report")
        assert code == 2 and "3 cases in a row failed" in out
        broken["on"] = False
        data = json.loads(b.read_text(encoding="utf-8"))
        data["repetitions"] = 1
        edited = tmp_path / "edited.yaml"
        edited.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        code, out = cli("run", edited, "--out", tmp_path / "run", "-q", "--no-report")
    assert code == 0, out
    assert "these edits are not used" in " ".join(out.split())
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM cases") == [(16,)]
    # every recorded case answered: the second repetition too, which the edited battery does not expand to
    assert rows(tmp_path / "run", "SELECT COUNT(DISTINCT case_id) FROM responses WHERE status = 'ok'") == [(16,)]
