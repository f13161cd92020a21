"""Typed records that every stage passes on (the ground floor: imports nothing else of fairpair).

Today it holds :mod:`fairpair.records._reasons`, the one list of reasons a comparison can have
no verdict (or only an ``inconclusive`` one), with their precedence; the case, answer,
measurement and results records move here too (issue "Records at the ground floor").
"""

from fairpair.records._reasons import (
    REASON_VERDICT,
    Reason,
    first_reason,
)

__all__ = ["REASON_VERDICT", "Reason", "first_reason"]
