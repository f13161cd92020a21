"""The ``openai`` target over a fleet of endpoints (several ``base_url``), against aiohttp loopback servers."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.run import RunSettings, Store, execute_run
from fairpair.targets._base import ChatRequest, TargetError
from fairpair.targets._fleet import Fleet, endpoint_failure
from fairpair.targets.openai import OpenAITarget
from fairpair.testing import names_table, write_battery
from fairpair.testing._aio import request_key, serve_fleet

FAST = RunSettings(concurrency=16, timeout=10, max_attempts=3, backoff_initial=0.01, backoff_max=0.05)


def block(servers, **kw):
    return {"kind": "openai", "base_url": [s.base_url for s in servers], "model": "mock-1", "api_key_env": None,
            **kw}


def opts(servers, **kw):
    return {k: v for k, v in block(servers, **kw).items() if k != "kind"}


def req(text: str, seed: int = 1) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": text},), seed=seed)


# ---------------------------------------------------------------- options
def test_a_single_string_and_a_one_item_list_stay_one_server():
    one = OpenAITarget({"model": "m", "base_url": "http://127.0.0.1:1/v1/", "api_key_env": None})
    listed = OpenAITarget({"model": "m", "base_url": ["http://127.0.0.1:1/v1"], "api_key_env": None})
    assert one.fleet is None and listed.fleet is None
    assert one.identity() == {**listed.identity(), "name": one.name}
    assert "fleet" not in one.identity() and one.identity()["base_url"] == "http://127.0.0.1:1/v1"


def test_fleet_options_are_checked():
    urls = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    t = OpenAITarget({"model": "m", "base_url": urls, "endpoint_concurrency": 4, "api_key_env": None})
    assert t.max_concurrency == 8
    assert t.identity()["base_url"] == urls
    assert t.identity()["fleet"] == {"endpoints": 2, "endpoint_concurrency": 4}
    with pytest.raises(FairpairError, match="twice"):
        OpenAITarget({"model": "m", "base_url": [urls[0], urls[0] + "/"], "api_key_env": None})
    with pytest.raises(FairpairError, match="http:// or https://"):
        OpenAITarget({"model": "m", "base_url": [urls[0], "ftp://x"], "api_key_env": None})
    with pytest.raises(FairpairError, match="endpoint_concurrency applies to a fleet"):
        OpenAITarget({"model": "m", "base_url": urls[0], "endpoint_concurrency": 4, "api_key_env": None})
    with pytest.raises(FairpairError, match="give one URL"):
        OpenAITarget({"model": "m", "base_url": [], "api_key_env": None})


def test_endpoint_failure_kinds():
    assert endpoint_failure(TargetError("connection error: refused", retryable=True)) == "connection"
    assert endpoint_failure(TargetError("timeout: no answer within 1 s", retryable=True)) == "connection"
    assert endpoint_failure(TargetError("server answered 503", retryable=True, status=503)) == "5xx"
    assert endpoint_failure(TargetError("server answered 429", retryable=True, status=429)) is None
    assert endpoint_failure(TargetError("malformed response: not JSON", retryable=True)) is None
    assert endpoint_failure(TargetError("authentication failed", status=401)) is None


# ---------------------------------------------------------------- spread, per-endpoint concurrency
def test_requests_are_spread_evenly_and_capped_per_endpoint():
    async def go(t, n):
        peak = {}

        async def one(i):
            return await t.generate(req(f"hola {i}", seed=i))

        async def watch():
            while True:
                for ep in t.fleet.endpoints:
                    peak[ep.base_url] = max(peak.get(ep.base_url, 0), ep.in_flight)
                await asyncio.sleep(0.002)

        w = asyncio.ensure_future(watch())
        try:
            out = await asyncio.gather(*(one(i) for i in range(n)))
        finally:
            w.cancel()
            await t.aclose()
        return out, peak

    with serve_fleet(3, latency=0.03) as servers:
        t = OpenAITarget(opts(servers, endpoint_concurrency=2))
        out, peak = asyncio.run(go(t, 30))
        counts = [sum(s.answered.values()) for s in servers]
    assert len(out) == 30 and all(c.text for c in out)
    assert sum(counts) == 30 and min(counts) >= 8  # least in flight first: close to even
    assert set(peak.values()) == {2}  # the cap was reached and never passed


# ---------------------------------------------------------------- one endpoint dies mid-run
def test_four_endpoints_one_dies_mid_run_all_answered_none_twice(tmp_path):
    with serve_fleet(4, latency=0.02, names=names_table()) as servers:
        lb = load_battery(write_battery(tmp_path, block(servers), repetitions=10))  # 160 cases
        killer_done = threading.Event()

        def kill_after_some():
            while sum(servers[2].answered.values()) < 8:
                time.sleep(0.002)
            servers[2].kill()
            killer_done.set()

        threading.Thread(target=kill_after_some, daemon=True).start()
        out = execute_run(lb, tmp_path / "run", FAST)
        assert killer_done.is_set()
        answered = [sum(s.answered.values()) for s in servers]
        per_request = sum((s.answered for s in servers), start=type(servers[0].answered)())
    with Store.open(tmp_path / "run", create=False) as store:
        rows = store.conn.execute("SELECT case_id, status FROM responses WHERE target='openai'").fetchall()
        n_cases = store.n_cases()
        drained = [e for e in store.events("fleet")][0]
    assert n_cases == 160
    assert len(rows) == 160 and {s for _, s in rows} == {"ok"}  # every case answered once, no failure stored
    assert len({c for c, _ in rows}) == 160
    # the preflight case went out 1 + 4 times (its answer, then the probe of every endpoint); every other
    # request once, but for the few the dying server took and never answered (at most 16 were in flight)
    repeated = sorted(v for v in per_request.values() if v > 1)
    assert repeated[-1] == 5 and len(repeated) <= 1 + 16 and sum(answered) <= 164 + 16
    assert len(per_request) == 160
    assert 8 <= answered[2] < 40 and min(answered[:2] + answered[3:]) > 40
    fleet = out.manifest["fleets"]["openai"]
    dead = fleet["endpoints"][2]
    assert dead["drains"] >= 1 and dead["healthy"] is False and "connection error" in dead["last_error"]
    assert fleet["mixed"] is False and out.warnings == []
    assert drained["endpoints"][2]["drains"] >= 1
    assert out.manifest["targets"]["openai"]["fleet"] == {"endpoints": 4, "endpoint_concurrency": None}


def test_a_drained_endpoint_is_probed_again_and_comes_back():
    async def go(t, servers):
        for i in range(4):
            await t.generate(req(f"a {i}", seed=i))
        servers[0].kill()
        for i in range(4):
            await t.generate(req(f"b {i}", seed=i))
        ep0 = t.fleet.endpoints[0]
        assert not ep0.healthy
        servers[0].revive()
        await asyncio.sleep(0.12)  # past the cool-down
        for i in range(6):
            await t.generate(req(f"c {i}", seed=i))
        await t.aclose()
        return ep0

    with serve_fleet(2) as servers:
        t = OpenAITarget(opts(servers))
        t.fleet.cooldown_initial = 0.1
        for ep in t.fleet.endpoints:
            ep.cooldown = 0.1
        ep0 = asyncio.run(go(t, servers))
        back = sum(v for k, v in servers[0].answered.items())
    assert ep0.healthy and ep0.drains == 1
    assert back >= 2 + 2  # two of the first four, and some of the last six after its return
    assert [e["event"] for e in t.fleet.events] == ["drained", "recovered"]


def test_every_endpoint_down_is_one_retryable_error():
    async def go(t):
        try:
            return await t.generate(req("hola"))
        finally:
            await t.aclose()

    with serve_fleet(2) as servers:
        for s in servers:
            s.kill()
        t = OpenAITarget(opts(servers))
        with pytest.raises(TargetError) as ei:
            asyncio.run(go(t))
    assert ei.value.retryable
    assert str(ei.value).startswith("connection error")
    assert all(not ep.healthy for ep in t.fleet.endpoints)


# ---------------------------------------------------------------- one model version
def test_mixed_fingerprints_are_reported_in_the_run_and_the_manifest(tmp_path):
    with serve_fleet(4, fingerprints=["fp_a", "fp_a", "fp_b", "fp_a"]) as servers:
        lb = load_battery(write_battery(tmp_path, block(servers), repetitions=2))
        out = execute_run(lb, tmp_path / "run", FAST)
    fleet = out.manifest["fleets"]["openai"]
    assert fleet["mixed"] is True
    assert {(v["model"], v["system_fingerprint"]) for v in fleet["versions"]} == {("mock-1", "fp_a"),
                                                                                  ("mock-1", "fp_b")}
    assert len(out.warnings) == 1 and "more than one model version" in out.warnings[0]
    assert "fp_b" in out.warnings[0] and "not paired" in out.warnings[0]
    with Store.open(tmp_path / "run", create=False) as store:
        probe = store.events("fleet_probe")[0]
        mixed = store.events("fleet_mixed")
        fps = dict(store.conn.execute("SELECT system_fingerprint, COUNT(*) FROM responses GROUP BY 1").fetchall())
    assert [e["system_fingerprint"] for e in probe["endpoints"]] == ["fp_a", "fp_a", "fp_b", "fp_a"]
    assert len(mixed) == 1
    assert set(fps) == {"fp_a", "fp_b"} and sum(fps.values()) == 32
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["fleets"]["openai"]["mixed"] is True


def test_mixed_served_models_are_reported_by_the_cli(tmp_path, capsys):
    from fairpair.cli import main

    with serve_fleet(2, models=["qwen-7b-v1", "qwen-7b-v2"]) as servers:
        battery = write_battery(tmp_path, block(servers), repetitions=1)
        try:
            main(["run", str(battery), "--out", str(tmp_path / "run"), "--yes", "--no-measure", "--no-analyze",
                  "--no-report", "-q"])
        except SystemExit as exc:
            assert not exc.code
    out = capsys.readouterr().out
    assert "warning:" in out and "qwen-7b-v1" in out and "qwen-7b-v2" in out


def test_one_version_fleet_is_not_mixed():
    fleet = Fleet([("a", "a/c"), ("b", "b/c")])

    async def go():
        for _ in range(3):
            i, ep = await fleet.acquire()
            await fleet.release(ep, answered=True, model="m", system_fingerprint=None)
        return fleet.report()

    r = asyncio.run(go())
    assert r["mixed"] is False and r["versions"] == [{"model": "m", "system_fingerprint": None}]
    assert [e["answered"] for e in r["endpoints"]] == [2, 1]
    assert request_key({"messages": [], "seed": 1}) == request_key({"seed": 1, "messages": []})


def test_5xx_is_sent_elsewhere_and_three_in_a_row_drain():
    fleet = Fleet([("a", "a/c"), ("b", "b/c")])
    err = TargetError("server answered 503", retryable=True, status=503)

    async def go():
        out = []
        for _ in range(3):
            _, ep = await fleet.acquire({1})  # always a
            out.append(await fleet.release(ep, error=err))
        drained_after_three = not fleet.endpoints[0].healthy
        i, ep = await fleet.acquire()  # a is drained: b
        await fleet.release(ep, answered=True, model="m")
        return out, drained_after_three, i

    kinds, drained, i = asyncio.run(go())
    assert kinds == ["5xx", "5xx", "5xx"] and drained and i == 1
    assert fleet.endpoints[0].drains == 1 and fleet.endpoints[0].failed == 3


def test_a_500_answer_is_retried_on_another_endpoint_within_one_call():
    from aiohttp import web

    from fairpair.testing._aio import AioServer

    async def broken(request):
        return web.json_response({"error": {"message": "engine dead"}}, status=500)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", broken)
    with AioServer(app) as bad, serve_fleet(1) as (good,):
        t = OpenAITarget({"model": "mock-1", "base_url": [bad.base_url, good.base_url], "api_key_env": None})

        async def go():
            try:
                return [await t.generate(req(f"x {i}", seed=i)) for i in range(4)]
            finally:
                await t.aclose()

        out = asyncio.run(go())
    assert len(out) == 4 and all(c.text for c in out)
    assert sum(good.answered.values()) == 4
    assert t.fleet.endpoints[0].failed >= 1 and t.fleet.endpoints[0].answered == 0
