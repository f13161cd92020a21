"""The measure protocol: one verb, ``measure``.

A measure turns one stored answer (and, for a *pairwise* measure, its
counterpart: the baseline answer or the reference group's answer) into a
typed :class:`MeasureResult`. Measures are plugins (entry-point group
``fairpair.measures``), declared in a battery's ``measures:`` block as
``name: {kind: ..., **options}``; each class validates its options with its
own ``Options`` model (``extra="forbid"``) when the battery is loaded.

A measure may return several named outputs (a tone judge scores courtesy,
condescension and distrust at once); each is stored as its own row named
``<measure>.<field>`` (``tone.courtesy``), so the analysis compares them one
by one. A result is either a value (``ok``), ``missing`` (the measure ran but
could not produce a value, e.g. a judge that never answered valid JSON; the
raw text is kept) or ``failed`` (an error that a later run retries, e.g. a
judge that could not be reached, or a leak that blocked the judge).

Lesson from ``inspect_ai``'s scorers: per-item errors are data, never an
exception that ends the stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # pragma: no cover
    from fairpair.cases import Case
    from fairpair.measures._runner import MeasureContext
    from fairpair.store import Response

__all__ = ["Scale", "SCALES", "MeasureItem", "MeasureResult", "Measure", "MeasureOptions"]

#: How a measure's values are analysed: ``binary`` (yes/no: McNemar, Cochran's
#: Q), ``count`` and ``continuous`` (Wilcoxon signed-rank, paired t),
#: ``ordinal`` (Likert levels: Wilcoxon signed-rank, weighted kappa),
#: ``categorical`` (k unordered outcomes such as approve / deny / refer:
#: Stuart-Maxwell and Bowker on the k x k table, and each outcome as a yes/no
#: measure ``<name>=<outcome>`` with McNemar and its risk difference).
from fairpair.records import SCALES, Scale  # noqa: E402 - the one list, beside its documentation


class MeasureOptions(BaseModel):
    """Base of every measure's ``Options`` (unknown keys are battery errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: The most characters of one answer a measure reads (200,000: about 30,000 words, far beyond any
#: chatbot answer); a longer answer is measured on its beginning, with a warning, so one hostile or
#: looping answer cannot make a rule or a pattern run for minutes (issue 28).
MAX_MEASURED_CHARS = 200_000


@dataclass(frozen=True)
class MeasureItem:
    """One thing to measure: a target's stored answer to a case.

    ``counterpart`` / ``counterpart_case`` are set for pairwise measures only:
    the answer it is compared with (same target).
    """

    target: str
    case: Case
    response: Response
    counterpart: Response | None = None
    counterpart_case: Case | None = None

    @property
    def text(self) -> str:
        """The answer's text in Unicode NFC (``""`` for none): every text measure reads this form,
        so an answer that came back decomposed (NFD) measures the same as its composed twin. An answer
        longer than :data:`MAX_MEASURED_CHARS` is measured on its first ``MAX_MEASURED_CHARS``
        characters (the measure stage warns; the stored answer is kept whole)."""
        from fairpair.measures.status import nfc

        return nfc((self.response.text or "")[:MAX_MEASURED_CHARS])

    def counterpart_response(self) -> Response:
        """The answer a pairwise measure compares this one with. Raises ``ValueError`` when the item has
        none (the measure stage gives every item of a pairwise measure one)."""
        if self.counterpart is None:
            raise ValueError(f"case {self.case.id}: a pairwise measure's item without a counterpart answer")
        return self.counterpart

    def status(self, language: str | None = None, speakers: dict[str, tuple[str, str]] | None = None):
        """The answer's :class:`~fairpair.measures.status.AnswerStatus` (``ok``, ``empty``,
        ``filtered``, ``truncated``, ``refused``, ``loop``, ``out_of_role``, ``wrong_language``,
        ``failed``). ``speakers``: design id -> (res, sub) names for the out-of-role check
        (``Battery.speakers()``); the case's design picks its pair."""
        from fairpair.measures.status import Roles, response_status

        pair = (speakers or {}).get(self.case.design) if self.case is not None else None
        return response_status(self.response, language, Roles(*pair) if pair else None)


@dataclass(frozen=True)
class MeasureResult:
    """What a measure returns for one item.

    Attributes
    ----------
    status:
        ``ok`` (a value), ``missing`` (no value could be obtained; final, not
        retried) or ``failed`` (an error; retried by the next run).
    value:
        The value of a single-output measure (bool, int, float, str).
    outputs:
        Field -> value for a measure with several outputs (stored as rows
        ``<measure>.<field>``); ``None`` for a single-output measure.
    detail:
        JSON-able extra data kept with the row (matched text, raw verdicts).
    raw:
        The raw text behind a ``missing`` value (e.g. the judge's last output).
    error:
        Why the value is missing or failed.
    """

    status: Literal["ok", "missing", "failed"]
    value: Any = None
    outputs: Mapping[str, Any] | None = None
    detail: dict[str, Any] | None = None
    raw: str | None = None
    error: str | None = None

    @classmethod
    def ok(cls, value: Any = None, *, outputs: Mapping[str, Any] | None = None,
           detail: dict[str, Any] | None = None) -> MeasureResult:
        return cls("ok", value=value, outputs=dict(outputs) if outputs is not None else None, detail=detail)

    @classmethod
    def missing(cls, error: str, *, raw: str | None = None,
                detail: dict[str, Any] | None = None) -> MeasureResult:
        return cls("missing", error=error, raw=raw, detail=detail)

    @classmethod
    def failed(cls, error: str, *, detail: dict[str, Any] | None = None) -> MeasureResult:
        return cls("failed", error=error, detail=detail)


class Measure:
    """Base class of measure plugins.

    Subclasses set ``Options`` (a :class:`MeasureOptions` subclass), ``scale``
    and, when they compare an answer with its counterpart, ``pairwise = True``
    (the runner then fills ``MeasureItem.counterpart``; the options must have
    ``against`` and, for ``against: reference``, ``reference``). Measures that
    call the battery's judge set ``uses_judge = True``.

    Constructor: ``Measure(options: dict, *, name: str)``; raises
    ``pydantic.ValidationError`` on bad options (the battery loader reports
    them with file, line and key before any run starts).
    """

    Options: ClassVar[type[MeasureOptions]] = MeasureOptions
    scale: ClassVar[Scale] = "continuous"
    pairwise: ClassVar[bool] = False
    uses_judge: ClassVar[bool] = False

    options: Any
    name: str

    def __init__(self, options: Mapping[str, Any] | MeasureOptions | None = None, *, name: str) -> None:
        self.options = options if isinstance(options, self.Options) else \
            self.Options.model_validate(dict(options or {}))
        self.name = name

    def outputs(self, ctx: MeasureContext | None = None) -> tuple[str, ...] | None:
        """Field names of a multi-output measure (rows ``<name>.<field>``); ``None`` if single."""
        return None

    def output_scales(self, ctx: MeasureContext | None = None) -> dict[str, Scale]:
        """Stored row name -> scale (what the analysis uses to pick a test)."""
        fields = self.outputs(ctx)
        if fields is None:
            return {self.name: self.scale}
        return {f"{self.name}.{f}": self.scale for f in fields}

    def categories(self, ctx: MeasureContext | None = None) -> dict[str, tuple[str, ...]]:
        """Stored row name -> the declared outcomes, for the rows whose scale is ``categorical``."""
        return {}

    def row_names(self, ctx: MeasureContext | None = None) -> tuple[str, ...]:
        fields = self.outputs(ctx)
        return (self.name,) if fields is None else tuple(f"{self.name}.{f}" for f in fields)

    async def prepare(self, items: list[MeasureItem], ctx: MeasureContext) -> None:
        """Called with each chunk of items about to be measured (e.g. to embed in batches)."""
        return None

    async def measure(self, item: MeasureItem, ctx: MeasureContext) -> MeasureResult:  # pragma: no cover
        raise NotImplementedError

    def judge_requests(self, item: MeasureItem, ctx: MeasureContext) -> list[list[dict[str, str]]]:
        """The judge calls :meth:`measure` sends for ``item`` (first attempts, no corrections): each
        call's masked messages. ``[]`` for a measure that calls no judge. The cost estimate
        (:mod:`fairpair.cost`) prices exactly these; a judge measure's ``measure`` sends them."""
        return []

    def embedded_texts(self, ctx: MeasureContext) -> bool:
        """Whether the measure embeds each answer once (``semantic_distance``): the cost estimate
        counts one embedding per answer for it."""
        return False

    def embedder_name(self, ctx: MeasureContext) -> str | None:
        """The embedder's name for a measure that embeds (:meth:`embedded_texts`); None otherwise."""
        return None

    def identity(self) -> dict[str, Any]:
        return {"kind": type(self).__name__, "options": self.options.model_dump(mode="json")}
