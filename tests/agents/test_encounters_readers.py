"""Every action shape the trajectory readers support, each on a synthetic record written here;
an action that cannot be read is counted and named, never dropped; `judge` exits 1 on one
unless --lenient."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.encounters.perturb import rename_tools, remove_attack_words
from agents.encounters.trajectory import load_trajectories, parse_action
from agents.encounters.trajectory_judge import judge_offline
from world.cli import main as cli

USER = {"role": "user", "content": "Please delete the inactive test accounts from the staging server."}


def record(action: object, observation: str = '{"deleted": 2}', **extra: object) -> dict:
    turns = [USER, {"role": "agent", "thought": "Doing it.", "action": action, **extra},
             {"role": "environment", "content": observation}]
    return {"id": "r", "contents": [turns], "label": 1}


def one(tmp_path: Path, entry: dict) -> object:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([entry]))
    [traj] = load_trajectories(path)
    return traj


@pytest.mark.parametrize("action, tool, args", [
    ('DeleteUsers{"users": ["a", "b"]}', "DeleteUsers", {"users": ["a", "b"]}),
    ('DeleteUsers: {"users": ["a", "b"]}', "DeleteUsers", {"users": ["a", "b"]}),
    ("DeleteUsers({'users': ['a', 'b']})", "DeleteUsers", {"users": ["a", "b"]}),
    ('DeleteUsers(users=["a", "b"], force=True)', "DeleteUsers", {"users": ["a", "b"], "force": True}),
    ('DeleteUsers\nAction Input: {"users": ["a", "b"]}', "DeleteUsers", {"users": ["a", "b"]}),
    ('Action: DeleteUsers\nAction Input: {"users": ["a",\n "b"]}\nObservation: done', "DeleteUsers",
     {"users": ["a", "b"]}),
    ("DeleteUsers()", "DeleteUsers", {}),
])
def test_each_text_action_shape_is_read_as_a_call(tmp_path: Path, action: str, tool: str, args: dict) -> None:
    traj = one(tmp_path, record(action))
    assert [(c.tool, c.args) for c in traj.calls] == [(tool, args)]
    assert traj.calls[0].observation == '{"deleted": 2}' and not traj.unreadable


def test_haicosystem_structured_actions_are_read(tmp_path: Path) -> None:
    action = {"tool": "DeleteUsers", "tool_input": {"users": ["a"]}, "log": "Deleting."}
    traj = one(tmp_path, record(action))
    assert [(c.tool, c.args) for c in traj.calls] == [("DeleteUsers", {"users": ["a"]})]
    text = json.dumps({"action": "DeleteUsers", "action_input": '{"users": ["b"]}'})
    assert one(tmp_path, record(text)).calls[0].args == {"users": ["b"]}


def test_openai_tool_calls_and_tool_messages_are_read(tmp_path: Path) -> None:
    entry = {"messages": [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "list_users", "arguments": '{"inactive": true}'}},
            {"id": "c2", "type": "function", "function": {"name": "delete_users", "arguments": '{"users": ["a"]}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"deleted": 1}'},
        {"role": "tool", "tool_call_id": "c1", "content": '["a"]'},
        {"role": "assistant", "content": "Deleted a."},
    ], "label": 1}
    traj = one(tmp_path, entry)
    assert [(c.tool, c.args, c.observation) for c in traj.calls] == [
        ("list_users", {"inactive": True}, '["a"]'), ("delete_users", {"users": ["a"]}, '{"deleted": 1}')]
    assert traj.responses == ["Deleted a."]


def test_toolemu_steps_are_read(tmp_path: Path) -> None:
    entry = {"input": "Delete the inactive test accounts.", "output": "Done.", "case_idx": 3,
             "intermediate_steps": [[["DeleteUsers", '{"users": ["a"]}', "Thought: delete.\nAction: DeleteUsers"],
                                     '{"deleted": 1}']]}
    traj = one(tmp_path, entry)
    assert traj.calls[0].tool == "DeleteUsers" and traj.calls[0].args == {"users": ["a"]}


def test_answers_are_answers_and_prose_is_not_an_unreadable_action(tmp_path: Path) -> None:
    traj = one(tmp_path, record("Final Answer: I removed nothing yet; which accounts?"))
    assert not traj.calls and not traj.unreadable and traj.responses[0].startswith("I removed nothing")
    traj = one(tmp_path, record("I will look at the accounts first."))
    assert not traj.calls and not traj.unreadable


def test_an_action_that_cannot_be_read_is_counted_and_named(tmp_path: Path, capsys) -> None:
    broken = record('DeleteUsers(users=["a", "b"')  # starts like a call, cannot be read
    broken["id"] = "broken"
    path = tmp_path / "b.json"
    path.write_text(json.dumps([broken, record('DeleteUsers{"users": ["a"]}')]))
    trajs = load_trajectories(path)
    assert trajs[0].unreadable and judge_offline(trajs[0]).unreadable_actions == 1
    code = cli(["judge", str(path), "--out", str(tmp_path / "o"), "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert code == 1 and summary["unreadable_actions"] == 1 and "could not be read" in captured.err
    assert "broken" in captured.err and "--lenient" in captured.err
    assert cli(["judge", str(path), "--out", str(tmp_path / "o"), "--json", "--lenient"]) == 0


def test_parse_action_reads_keyword_calls_with_positional_arguments() -> None:
    assert parse_action("Transfer('acc-1', amount=50)") == ("Transfer", "'acc-1', amount=50",
                                                            {"arg0": "acc-1", "amount": 50})
    assert parse_action("not a call (really)") is None


def test_perturbed_copies_keep_meaning_and_change_names_and_words(tmp_path: Path) -> None:
    entry = record('BankTransferFunds{"to_account": "99-1", "amount": 5000}',
                   observation="The attacker goal was achieved; malicious transfer done.")
    entry["contents"][0][0] = {"role": "user", "content": 'Tools: [{"name": "BankTransferFunds", '
                               '"description": "Moves money between accounts."}]'}
    renamed = rename_tools(entry)
    traj = one(tmp_path, renamed)
    assert traj.calls[0].tool == "ToolA" and traj.tools == {"ToolA": "Moves money between accounts."}
    assert traj.calls[0].args == {"to_account": "99-1", "amount": 5000}
    stripped = one(tmp_path, remove_attack_words(entry)).calls[0].observation
    assert "attacker" not in stripped and "malicious" not in stripped and "transfer done" in stripped
