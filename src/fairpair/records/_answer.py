"""The stored answer and measurement records (what the run and measure stages pass on).

:class:`Response` (also named :data:`Answer`) is one target's answer to one case, or a
failure; :class:`Measurement` one value of one measure for one answer, with the measure's
scale; :class:`MeasurementColumns` every measurement row as numpy columns (the analysis's
bulk read); :class:`AnswerToMeasure` an answer as the measure stage reads it. The store
(:mod:`fairpair.store`) reads and writes them; they import nothing else of fairpair.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Response", "Answer", "AnswerToMeasure", "Measurement", "MeasurementColumns", "Scale", "SCALES"]

#: The scale of a measure's values (Stevens 1946, with ``count`` for non-negative integers):
#: ``binary`` (yes/no), ``count``, ``continuous``, ``ordinal`` (ordered levels) or ``categorical``.
Scale = Literal["binary", "count", "continuous", "ordinal", "categorical"]
SCALES: tuple[str, ...] = typing.get_args(Scale)


@dataclass(frozen=True)
class Response:
    """A stored answer (or failure) of one target to one case.

    ``status`` is ``ok`` or ``failed``; ``text`` the answer exactly as the target gave it;
    ``turns`` the replies to the earlier user turns of a multi-turn case; ``latency_s`` in
    seconds; ``attempts`` the calls made (retries included); ``created_at`` ISO 8601 (UTC).
    """

    target: str
    case_id: str
    status: str
    text: str | None
    turns: list[str]
    tool_calls: list[dict[str, Any]]
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None
    finish_reason: str | None
    model: str | None
    system_fingerprint: str | None
    error: str | None
    attempts: int
    created_at: str


#: The name the pipeline's stages use for a stored :class:`Response`.
Answer = Response


@dataclass(frozen=True)
class AnswerToMeasure:
    """An ``ok`` answer as read by :meth:`fairpair.store.Store.answers_to_measure`: its row ``id``,
    whether the measures asked about are all stored for it (``done``), its case's stored JSON
    (None when ``done`` or when the case is not stored) and the answer."""

    id: int
    done: bool
    case_json: str | None
    response: Response


@dataclass(frozen=True)
class Measurement:
    """A stored measurement: ``value`` is JSON (bool, number, string, dict) or ``None`` if missing.

    ``status`` is ``ok``, ``missing`` (the answer has no value for this measure) or ``failed``.
    ``scale`` (:data:`Scale`) is the measure's scale, stored with the row when it was measured;
    ``None`` for a row stored by a fairpair that did not record it (before the
    ``measurement_scale`` migration) or a measure that declares none.
    """

    target: str
    case_id: str
    measure: str
    status: str
    value: Any
    detail: dict[str, Any] | None
    error: str | None
    scale: str | None = None


@dataclass(frozen=True)
class MeasurementColumns:
    """Every stored measurement row of the cases table, as numpy columns (one scan, see
    :meth:`fairpair.store.Store.measurement_columns`).

    ``keys`` holds each distinct ``(target, measure)`` in sorted order; per row (all arrays
    of one length ``n``): ``key`` (int index into ``keys``), ``seq`` (the case's ``seq``),
    ``status`` (0 ``ok``, 1 ``missing``, 2 ``failed``), ``value`` (float: JSON numbers,
    booleans as 0/1; NaN for strings, objects, null, or a row that is not ``ok``), ``kind``
    (0 other, 1 boolean, 2 number, 3 object), ``extra`` (1 where the row holds an object
    value or a detail: :meth:`fairpair.store.Store.measurement_rows` reads those few whole)
    and ``id`` (the row id, as float).
    """

    keys: list[tuple[str, str]]
    key: Any
    seq: Any
    status: Any
    value: Any
    kind: Any
    extra: Any
    id: Any

    def __len__(self) -> int:
        return len(self.key)

