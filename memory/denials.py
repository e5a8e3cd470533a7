"""Whether a resident's words say "I do not know": one rule for everyone who reads an answer.

Three readers need the same rule and sit in layers that cannot import each other: the interview's
answer check (agents/roles/interview.py refuses a denial of what memory holds), the society judge's
scripted verdict (agents/roles/society.py) and the bench's score (replays/society.py). When they
differed, SmolLM2's "No, I didn't know there was a party" from a resident who remembered the party
passed the interview check and then counted as not knowing it. The rule lives here, below both.

A denial is the resident's own ('I have never met her', "I'm not aware", 'we haven't met') or opens
a sentence ('No.', 'Never heard of him.'); a denial someone else made, retold ('Grace told me that
she had not heard that Ben is running'), is not one.
"""

from __future__ import annotations

import re

_DENYING = (r"(?:do not|don'?t|didn'?t|did not) (?:know|recall|remember|think i know)|"
            r"(?:have |had |'ve |'d )?(?:never|not) (?:met|heard|seen|known)|"
            r"(?:haven'?t|hasn'?t|hadn'?t) (?:met|heard|seen|known)|"
            r"(?:am |'m |was |were )?(?:not (?:aware|sure who|familiar)|unaware)|wasn'?t (?:aware|familiar)|"
            r"know nothing about|"
            r"can'?t (?:recall|remember|say)|cannot (?:recall|remember)")
_DENIAL = re.compile(
    rf"^\s*no\b|\bno idea\b|\bwho(?:'s| is) that\b|"
    rf"(?:^|[.!?;:]\s+|\b(?:I|we)(?![\w])\s*(?:(?:really|honestly|actually|just|still|truly|simply) )?)(?:{_DENYING})\b",
    re.I)


def denies(answer: str) -> bool:
    """Whether an answer says it does not know ('I don't know who that is', 'No, I have not heard')."""
    return bool(_DENIAL.search(answer))
