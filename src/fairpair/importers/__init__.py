"""Importers: answers that already exist, as an ordinary run directory.

``fairpair import-answers FILE --battery B.yaml --out RUN`` reads answers in
the interchange format (:class:`AnswerRow`, JSON Lines or CSV) or OpenAI
chat-completion records (with a :class:`RecordsMapping`), checks every row,
and writes a new run directory in one transaction, so that ``measure``,
``analyze``, ``report``, ``compare`` and ``gate`` work on it as on a run.
``fairpair answers-schema`` prints the JSON schemas generated from these models.
"""

from fairpair.importers._format import (
    AnswerRow,
    FieldRef,
    ImportAttribute,
    ImportBattery,
    ImportGroup,
    RecordsMapping,
    answers_schema,
)
from fairpair.importers._import import ImportResult, LoadedImport, import_answers, load_import_battery

__all__ = ["AnswerRow", "FieldRef", "ImportAttribute", "ImportBattery", "ImportGroup", "ImportResult",
           "LoadedImport", "RecordsMapping", "answers_schema", "import_answers", "load_import_battery"]
