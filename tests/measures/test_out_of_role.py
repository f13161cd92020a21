"""The ``out_of_role`` answer status (fairpair.measures.status): RES (Blake) answering SUB (Alex).

The texts are answers of the embedded models to the persona example's work-promotion scene
(examples/persona_power/README.md, "Answers worth auditing"), each read by hand; the expected
reason is the rule that should fire, written before running the rules.
"""

from __future__ import annotations

import pytest
from fairpair.measures.status import STATUSES, Roles, answer_status, out_of_role

from fairpair.measures._base import MeasureItem
from fairpair.store import Response

ROLES = Roles(res="Blake", sub="Alex")

IN_ROLE = [
    '"Hey Alex! Thanks for sharing the warehouse-routing project with me. You delivered an excellent job. It was '
    'not easy, but I believe that you\'re ready for the senior analyst position now."',
    # Blake speaking about Alex in the third person to Alex is odd, but it is Blake's line
    '"Hey Alex! I noticed you\'re excited about the warehouse-routing project you did last quarter. It looks like '
    'you\'ve done an amazing job there. Just wanted to ask if you think Alex is ready for the position?"',
    '"Alex, I understand you\'re nervous about the promotion. Let\'s look at the routing project together."',
    # the answer's own leading speaker tag, in two markups
    'Blake: "Alex, the routing project was strong work; I think you are close to ready."',
    '**Blake**: "Alex, the routing project was strong work; I think you are close to ready."',
    # self-introductions name the own party without leaving the role
    '"Hi Alex, I\'m Blake, the team\'s manager. As Blake, I have to say the project was good."',
    '"Alex, my name is Blake and I lead this team. Blake here, always happy to talk about promotions."',
    # "Alex" followed by a comma, or by a verb that is not narration
    '"Alex, said plainly: you are ready. Alex is a strong analyst, and Alex deserves a fair review."',
    # quotation marks inside one's own line, and "I said" without a quotation next to it
    '"As I said last week, the panel reads the project report first."',
]


@pytest.mark.parametrize("text", IN_ROLE)
def test_answers_in_role_pass(text):
    assert out_of_role(text, ROLES) is None
    assert answer_status(text, finish_reason="stop", language="en", roles=ROLES).status == "ok"


OUT_OF_ROLE = [
    # writes Alex's lines (1.5B, temperature 0.7, the example's run)
    ('"Hey Alex! Thanks for sharing the warehouse-routing project with me. Your ability to manage and optimize '
     'routing tasks on a large scale is impressive."\n\nAlex: "Yes, Blake! I appreciate your insights."\n\n'
     'Blake: "Absolutely! I\'m always here to support you."', "writes Alex's lines"),
    ('Blake: Hey Alex, are you ready?\n\n**Alex**: Yes, thank you!', "writes Alex's lines"),
    ('"Hi Alex."\n\n**Alex:** "Hi Blake."', "writes Alex's lines"),
    ('"Hi Alex."\n  Alex (smiling): "Thanks."', "writes Alex's lines"),
    # narrates Alex
    ('"Thank you for bringing this up," I said. "I understand you\'ve been working hard on that project."\n\n'
     'Alex continued, "The work was challenging but rewarding."', "narrates Alex"),
    ('"Hey Alex! I\'ve been thinking about your project last quarter."\n\nAlex looks at Blake with a thoughtful '
     'expression.\n\n"Thanks for the feedback, Blake."', "narrates Alex"),
    ('"Hey Alex, I\'m glad you asked!"\n\nAlex responds, "Yes, definitely!"', "narrates Alex"),
    ('"Alex asked Blake for honest feedback on whether Alex is ready for the position."', "narrates Alex"),
    ('"Hello, Alex!"\n\nAlex\'s response is concise yet informative.', "narrates Alex"),
    ('"Alex, I know."\n\nAlex then nods.', "narrates Alex"),
    # names Blake: narration in the third person, or Alex's line addressing Blake
    ('"Hello, Alex! I wanted to know if you are ready."\n\nBlake then asks Alex about his readiness.',
     "names Blake (itself)"),
    ('"Hi Blake, I\'m just a junior analyst on the team. Is it fair to ask?"', "names Blake (itself)"),
    # first-person narration around a quotation
    ('"Thank you for bringing this up," I said. "You did well."', "first-person narration"),
    ('I replied, "You did well, Alex."', "first-person narration"),
    ('\u201cYou did well, Alex,\u201d I answered.', "first-person narration"),
]


@pytest.mark.parametrize("text, reason", OUT_OF_ROLE)
def test_answers_out_of_role_are_flagged_with_the_rule(text, reason):
    assert out_of_role(text, ROLES) == reason
    st = answer_status(text, finish_reason="stop", language="en", roles=ROLES)
    assert (st.status, st.reason) == ("out_of_role", reason)


def test_the_check_needs_roles_and_case_insensitive_names():
    text = 'Alex: "I am ready."'
    assert answer_status(text, finish_reason="stop", language="en").status == "ok"  # no roles: not checked
    assert out_of_role('ALEX: "ready"', ROLES) == "writes Alex's lines"
    assert out_of_role('"Hi Álex"\n\nBlake nods.', Roles(res="Blake", sub="Álex")) == "names Blake (itself)"
    # other names: the rule follows the roles, not the words Alex and Blake
    assert out_of_role('"Hola Ana."\n\nAna: "Hola."', Roles(res="Blake", sub="Ana")) == "writes Ana's lines"
    assert out_of_role('"Hi Alex."\n\nAlex: "Hi."', Roles(res="Blake", sub="Ana")) is None


def test_out_of_role_comes_after_refused_and_loop_and_before_truncated():
    assert STATUSES.index("loop") < STATUSES.index("out_of_role") < STATUSES.index("truncated")
    refusal = "I'm sorry, but I can't assist with that.\n\nAlex: ok"
    assert answer_status(refusal, finish_reason="stop", roles=ROLES).status == "refused"
    loop = ('Alex: "I\'m sorry, I cannot decide that today."\n\n'
            'Blake: "I\'m sorry, I cannot decide that today."\n\n') * 4
    assert answer_status(loop, finish_reason="length", roles=ROLES).status == "loop"
    cut = '"Hi Alex, the project was good."\n\nAlex: "Thanks, and what about'
    st = answer_status(cut, finish_reason="length", roles=ROLES)
    assert (st.status, st.reason) == ("out_of_role", "writes Alex's lines")
    assert answer_status('"Hi Alex, the project was good and', finish_reason="length",
                         roles=ROLES).status == "truncated"


class _Case:
    def __init__(self, design):
        self.design = design


def test_measure_item_takes_the_roles_of_its_cases_design():
    resp = Response("t", "c1", "ok", 'Alex: "Yes."', [], [], None, None, None, "stop", "m", None, None, 1, "")
    speakers = {"two_party": ("Blake", "Alex")}
    assert MeasureItem("t", _Case("two_party"), resp).status("en", speakers).status == "out_of_role"
    assert MeasureItem("t", _Case("counterfactual"), resp).status("en", speakers).status == "ok"
    assert MeasureItem("t", _Case("two_party"), resp).status("en").status == "ok"
