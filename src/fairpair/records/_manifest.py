"""The typed ``manifest.json`` record: a run's provenance (:class:`RunManifest`).

Written by :meth:`fairpair.store.Run.write_manifest` (each stage merges its own keys over the
file's: the run stage the battery, targets, settings and package versions, the measure stage
``measurement``, an import ``import``) and read back by :meth:`fairpair.store.Run.run_manifest`.
Keys a later fairpair adds are kept (``extra="allow"``): nothing recorded is dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunManifest"]


class RunManifest(BaseModel):
    """``RUN/manifest.json``: what produced a run, for its provenance (never a secret).

    Attributes
    ----------
    fairpair_version, battery, battery_sha256, battery_path:
        The fairpair and the battery file (its sha256 as loaded) the run was made with.
    selection:
        ``--templates`` / ``--axes`` of a partial run (:func:`fairpair.battery.select`), or None.
    plan_sha256, plan_sha256_now:
        The analysis plan registered at the start, and the one executed (the recorded battery's: an edited
        battery offered later is refused, see ``plan_edits_refused``).
    expansion:
        The expansion's manifest (cases per design, exclusions, prompt templates).
    targets:
        target name -> its identity (kind, model, options; secrets never recorded).
    settings, packages, git_revision:
        The run settings, installed package versions, and git revisions of battery and fairpair.
    started_at, finished_at:
        ISO 8601 (UTC) times of the last run session; ``finished_at`` None while it runs.
    counts:
        target -> ``answered`` / ``failed`` / ``retried`` / ``cases`` (from the store, at each write).
    last_session, answer_statuses, fleets:
        Per target: the last session's counts, the answer statuses, the endpoints of a fleet.
    measurement:
        The measure stage's judge, judge prompts, judge measures, embedders and engine.
    import_:
        (``import`` in the file) provenance of answers imported by ``fairpair import-answers``.
    plan_changed_after_registration, targets_changed_after_answers:
        The executed plan differs from the registered one; targets whose options changed after answers.
    plan_edits_refused:
        How many times a battery with an edited analysis plan was offered to this run directory and refused
        (its edits not used).
    tokens:
        The tokens actually used, from the providers' ``usage`` fields: ``answers`` (target ->
        ``calls``, ``input_tokens``, ``output_tokens``, ``without_usage``: the stored answers, every turn
        of a multi-turn case summed; recounted from the store at each write) and ``judge`` (measure, or
        ``judge self-test`` -> the same counts and the judge's ``model``; added up over the measure
        sessions). ``without_usage`` counts calls whose provider reported no usage (left out of the sums).
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    fairpair_version: str | None = None
    battery: str | None = None
    battery_sha256: str | None = None
    battery_path: str | None = None
    selection: dict[str, Any] | None = None
    plan_sha256: str | None = None
    plan_sha256_now: str | None = None
    expansion: dict[str, Any] | None = None
    targets: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] | None = None
    packages: dict[str, Any] | None = None
    git_revision: dict[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    last_session: dict[str, Any] | None = None
    answer_statuses: dict[str, Any] | None = None
    fleets: Any = None
    measurement: dict[str, Any] | None = None
    import_: dict[str, Any] | None = Field(None, alias="import")
    plan_changed_after_registration: bool = False
    plan_edits_refused: int = 0
    targets_changed_after_answers: list[str] = Field(default_factory=list)
    tokens: dict[str, dict[str, dict[str, Any]]] | None = None

    def merged(self, update: RunManifest) -> RunManifest:
        """A copy of this manifest with every key set in ``update`` (its fields and its extra keys)
        replacing this one's: a stage writes its own keys whole (top level), the others are kept."""
        out = self.model_copy(deep=True)
        for name in update.model_fields_set:
            setattr(out, name, getattr(update, name))
        for name, value in (update.model_extra or {}).items():
            setattr(out, name, value)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``manifest.json``: the keys set (or defaulted by a write), by their file names."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
