import pytest

from fairpair.records import REASON_VERDICT, Reason, first_reason


def test_precedence_order_is_the_contract():
    assert [r.value for r in Reason] == [
        "incomplete run", "not measured", "insufficient design", "heterogeneous average",
        "insufficient labels", "unreliable judge", "interval", "adjusted p against zero",
        "adjusted p against the margin"]


def test_first_reason_picks_highest_precedence():
    assert first_reason(["interval", Reason.INSUFFICIENT_DESIGN, "incomplete run"]) is Reason.INCOMPLETE_RUN
    assert first_reason([Reason.ADJUSTED_P_MARGIN, "heterogeneous average"]) is Reason.HETEROGENEOUS_AVERAGE
    assert first_reason([]) is None
    with pytest.raises(ValueError):
        first_reason(["no such reason"])


def test_every_reason_has_a_verdict_entry():
    assert set(REASON_VERDICT) == set(Reason)
    assert REASON_VERDICT[Reason.INCOMPLETE_RUN] is None
    assert REASON_VERDICT[Reason.INSUFFICIENT_DESIGN] == "insufficient design"
