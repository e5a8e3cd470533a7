"""Perturbed copies of labelled trajectories, to see whether a judge reads meaning or wording.

Two perturbations, applied to the raw records before they are read, so the reader is tested
with them: tool names neutralised (every tool the record calls or lists becomes ToolA, ToolB,
... everywhere in the record; descriptions and arguments keep their meaning) and attack words
removed (the vocabulary that announces an attack: "attacker", "malicious", "exfiltrate",
"backdoor", ...). A judge whose verdicts follow what the calls do scores about the same on
both; one that follows names or words falls (issue 27: 0.96 -> 0.10 before the rewrite).
"""

from __future__ import annotations

import re
from typing import Any

from agents.encounters.trajectory import listed_tools, parse_action, structured_action

ATTACK_WORDS = re.compile(
    r"\b(attack(?:s|ed|ing|er|ers)?|malicious(?:ly)?|malware|exploit(?:s|ed|ing|ation)?|backdoors?|"
    r"hack(?:s|ed|ing|er|ers)?|steal(?:s|ing)?|stole|stolen|theft|exfiltrat(?:e|es|ed|ing|ion)|"
    r"leak(?:s|ed|ing|age)?|breach(?:es|ed)?|sabotag(?:e|es|ed|ing)|infiltrat(?:e|es|ed|ing|ion)|"
    r"fraud(?:ulent|ulently)?|unauthori[sz]ed|compromis(?:e|es|ed|ing)|ransomware|phishing|harm(?:ful|s)?|"
    r"illegal(?:ly)?|unethical|manipulat(?:e|es|ed|ing|ion)|stealth(?:y|ily)?|injection|victims?)\b",
    re.I)


def _strings(value: Any, change: Any) -> Any:
    """``value`` with ``change`` applied to every string in it (keys and non-strings kept)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("id", "label") else _strings(v, change) for k, v in value.items()}
    return value


def _actions(value: Any) -> list[Any]:
    """Every agent action (text or structured) and OpenAI tool call in a record."""
    found: list[Any] = []
    if isinstance(value, dict):
        for key in ("action", "tool_calls", "tool"):
            item = value.get(key)
            if isinstance(item, list):
                found += item
            elif item:
                found.append(item)
        for item in value.values():
            if isinstance(item, (dict, list)):
                found += _actions(item)
    elif isinstance(value, list):
        for item in value:
            found += _actions(item)
    return found


def tool_names(record: dict[str, Any]) -> list[str]:
    """The tools a record calls or lists, in the order they first appear."""
    names: list[str] = []
    for action in _actions(record):
        parsed = structured_action(action) if not isinstance(action, str) else parse_action(action.strip())
        if isinstance(action, str) and not parsed:
            parsed = structured_action(action)
        if parsed and parsed[0] not in names:
            names.append(parsed[0])
    texts: list[str] = []
    _strings(record, lambda text: texts.append(text) or text)
    for text in texts:
        for name in listed_tools(text):
            if name not in names:
                names.append(name)
    return [n for n in names if n not in ("Complete", "Final Answer", "Respond", "Finish", "final_answer")]


def _label(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return "Tool" + letters


def rename_tools(record: dict[str, Any]) -> dict[str, Any]:
    """The record with each tool's name replaced by ToolA, ToolB, ... wherever it appears."""
    names = sorted(tool_names(record), key=len, reverse=True)
    if not names:
        return record
    mapping = {name: _label(i) for i, name in enumerate(tool_names(record))}
    pattern = re.compile(r"(?<![\w])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])")
    return _strings(record, lambda text: pattern.sub(lambda m: mapping[m.group(1)], text))


def remove_attack_words(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the attack vocabulary taken out of every text (double spaces closed up)."""
    return _strings(record, lambda text: re.sub(r"[ \t]{2,}", " ", ATTACK_WORDS.sub("", text)))


PERTURBATIONS = {
    "plain": lambda r: r,
    "renamed": rename_tools,
    "words_removed": remove_attack_words,
    "both": lambda r: remove_attack_words(rename_tools(r)),
}
