"""Issue 29, case by case: what broke under an attacker's hand now holds.

Each test names its case (1-14). Every command answers with a message naming the file, option
or cause; nothing is left half-made; no traceback reaches the user.
"""

from __future__ import annotations

import asyncio
import json
import re
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest

from maps.files import FileReadError, read_json
from maps.town import TownError, load_town
from memory.runfile import RunStore
from replays import control
from replays.lock import LOCK_NAME, RunLock
from world.cli import main
from world.cli.run_many import RUNS_FILE, _die_with_parent, _keep_latest, markdown
from world.runner import MAX_COMMANDS_PER_TICK, RunOptions, build_engine, submit_durably

REPO = Path(__file__).resolve().parents[2]
ROUTINE = ["run", "--mind", "routine", "--quiet", "--no-control", "--start", "2026-03-01 08:00"]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "TOWNSFOLK_EMBEDDER": "hashing"}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    return code, out, err


def town_copy(tmp_path: Path) -> Path:
    """A copy of the default town (map and the 3-resident file) to damage."""
    folder = tmp_path / "town"
    folder.mkdir()
    src = REPO / "maps" / "towns" / "default"
    (folder / "town.json").write_bytes((src / "town.json").read_bytes())
    (folder / "residents.json").write_bytes((src / "residents.json").read_bytes())
    return folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A 5-minute routine run: ticks 0..29."""
    out = tmp_path_factory.mktemp("rec") / "run"
    assert main([*ROUTINE, "--duration", "5m", "--out", str(out)]) == 0
    return out


# -- 1: many residents: no file per resident, and running out of files is named -----------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_1_memory_stores_of_one_run_file_share_one_connection(tmp_path: Path) -> None:
    from memory.embeddings import CachedEmbedder, HashingEmbedder
    from memory.store import MemoryStore

    embedder = CachedEmbedder(HashingEmbedder())
    first = MemoryStore(tmp_path / "run.db", "Resident 0", embedder=embedder)
    before = _open_fds()
    stores = [MemoryStore(tmp_path / "run.db", f"Resident {i}", embedder=embedder) for i in range(1, 200)]
    assert _open_fds() - before <= 1  # two files per resident before: 400 here, 20,000 for 10,000 residents
    for store in stores:
        store.close()
    first.close()


def test_1_running_out_of_open_files_is_named_not_a_database_error(tmp_path: Path) -> None:
    """A run at its open-file limit says so (EMFILE, the figures, the fix) and leaves nothing; the
    limit is lowered in the child (soft and hard, so the CLI cannot raise it) to force the cause."""
    out = tmp_path / "run"
    script = textwrap.dedent(f"""
        import os, resource, sys
        from world.cli import main
        import world.cli.run, agents.minds.generative, memory.store  # imported before the limit bites
        n = len(os.listdir('/proc/self/fd'))
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 4, n + 4))
        sys.exit(main(['run', '--model', 'scripted', '--agents', '3', '--duration', '1m', '--quiet',
                       '--no-control', '--out', {str(out)!r}]))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 1, done.stderr
    assert "too many open files" in done.stderr and "EMFILE" in done.stderr and "ulimit -n" in done.stderr
    assert "Traceback" not in done.stderr and "terminate called" not in done.stderr
    assert not out.exists()


def test_1_sqlite_out_of_files_is_told_apart_from_a_damaged_file(monkeypatch) -> None:
    import sqlite3

    import world.failures as failures

    error = sqlite3.OperationalError("unable to open database file")
    monkeypatch.setattr(failures, "open_file_limit", lambda: 1024)
    monkeypatch.setattr(failures, "open_files", lambda: 1020)
    assert failures.out_of_files(error)
    assert "too many open files (1020 open, limit 1024)" in failures.describe_failure(error)
    monkeypatch.setattr(failures, "open_files", lambda: 40)
    assert not failures.out_of_files(error)  # a missing folder or a permission: not this
    assert failures.out_of_files(OSError(24, "Too many open files"))


# -- 2: special files are refused before reading ------------------------------------------------


@pytest.mark.parametrize("special, expected", [
    ("/dev/zero", "is a character device; expected a regular file"),
    ("/dev/urandom", "is a character device; expected a regular file"),
    ("fifo", "is a FIFO (named pipe); expected a regular file"),
    ("folder", "is a folder"),
])
def test_2_a_town_map_that_is_a_device_fifo_or_folder_is_refused_at_once(tmp_path: Path, special: str,
                                                                          expected: str) -> None:
    folder = town_copy(tmp_path)
    (folder / "town.json").unlink()
    if special == "fifo":
        os.mkfifo(folder / "town.json")
    elif special == "folder":
        (folder / "town.json").mkdir()
    else:
        (folder / "town.json").symlink_to(special)
    started = time.monotonic()
    with pytest.raises(TownError, match=re.escape(expected)):
        load_town(folder)
    assert time.monotonic() - started < 5  # no hang on the FIFO, no 22 GB read of /dev/zero


def test_2_residents_from_dev_zero_and_a_huge_sparse_file_are_refused(tmp_path: Path, capsys) -> None:
    code, _, err = cli(capsys, *ROUTINE, "--residents", "/dev/zero", "--out", str(tmp_path / "a"))
    assert code == 1 and "/dev/zero: (file): is a character device" in err and not (tmp_path / "a").exists()
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # 200 MB of nothing, allocated by no one
    with pytest.raises(FileReadError, match=r"file is 209715200 bytes; expected a file of at most"):
        read_json(huge)


def test_2_not_a_number_and_infinite_numbers_are_refused(tmp_path: Path) -> None:
    for text in ("[NaN]", "[Infinity]", "[-Infinity]", "[1e400]"):
        (tmp_path / "n.json").write_text(text)
        with pytest.raises(FileReadError, match="not valid JSON"):
            read_json(tmp_path / "n.json")
    (tmp_path / "n.json").write_text("[1e308, -0, 0.5]")
    assert read_json(tmp_path / "n.json") == [1e308, 0, 0.5]


# -- 3 and 4: nested JSON, --out naming a file --------------------------------------------------


def test_3_deeply_nested_json_is_refused_by_run_import_and_eval(tmp_path: Path, capsys) -> None:
    deep = tmp_path / "set" / "deep.json"
    deep.parent.mkdir()
    deep.write_text("[" * 200_000 + "]" * 200_000)
    code, _, err = cli(capsys, *ROUTINE, "--encounters", str(deep), "--out", str(tmp_path / "r"))
    assert code == 2 and "nested too deeply" in err and not (tmp_path / "r").exists()
    code, _, err = cli(capsys, "import", "haicosystem", str(deep.parent))
    assert code == 1 and "deep.json" in err and "nested too deeply" in err
    code, _, err = cli(capsys, "eval", str(deep.parent), "--out", str(tmp_path / "e"), "--no-progress")
    assert "nested too deeply" in err


def test_4_out_naming_a_file_is_refused_by_eval_and_import(tmp_path: Path, capsys) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    code, _, err = cli(capsys, "eval", "builtin:clinic", "--out", str(taken), "--no-progress")
    assert code == 2 and f"--out {taken}: is a file" in err
    folder = tmp_path / "set"
    folder.mkdir()
    code, _, err = cli(capsys, "import", "haicosystem", str(folder), "--out", str(taken))
    assert code == 2 and f"--out {taken}: is a file" in err
    assert taken.read_text() == "keep me"


# -- 5: inject --timeout ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "-1", "0", "-0"])
def test_5_inject_timeout_must_be_a_finite_positive_number(value: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["inject", str(tmp_path), "--announce", "hi", "--timeout", value])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--timeout" in err and "Traceback" not in err


# -- 6 and 7: refused commands are never poison; accepted ones survive a kill -------------------------


def _engine(tmp_path: Path, **extra):
    options = RunOptions(mind="routine", duration=timedelta(minutes=2), out=tmp_path / "run",
                         start="2026-03-01 08:00", **extra)
    return build_engine(options)


def test_6_a_refused_command_with_a_lone_surrogate_leaves_every_reader_working(tmp_path: Path, capsys) -> None:
    engine = _engine(tmp_path)
    server = control.ControlServer(engine.context.run_dir, submit_durably(engine))
    reply = server.handle_line(b'{"op":"inject","command":{"kind":"announce","text":"\\ud800 \\u202e"}}\n')
    assert reply["ok"] is False and "U+D800" in reply["error"]
    assert json.dumps(reply, ensure_ascii=False).encode("utf-8")  # the reply itself can be sent
    asyncio.run(engine.run(engine.context.until))
    engine.store.close()
    store = RunStore.open(engine.context.run_dir)
    injects = [r for tr in store.iter_ticks() for r in tr.records if r.kind == "inject"]
    store.close()
    assert len(injects) == 1 and injects[0].data["accepted"] is False
    assert "\\ud800" in injects[0].data["command"]["text"]  # recorded escaped, never as a surrogate
    code, out, _ = cli(capsys, "replay", str(engine.context.run_dir), "--timeline")
    assert code == 0 and "refused" in out
    code, out, _ = cli(capsys, "replay", str(engine.context.run_dir), "--summary")
    assert code == 0


def test_7_an_accepted_command_is_kept_before_the_ack_and_applied_after_a_kill(recorded: Path, tmp_path: Path,
                                                                                capsys) -> None:
    run = tmp_path / "run"
    assert main(["run", "--fork", str(recorded), "--at", "tick:29", "--out", str(run), "--quiet",
                 "--no-control", "--duration", "1m"]) == 0
    engine = build_engine(RunOptions(resume=run, duration=timedelta(minutes=1)))
    last = engine.tick
    submit = submit_durably(engine)
    replies = [submit({"kind": "announce", "text": f"fire drill {i}"}) for i in range(3)]
    assert all(r["accepted"] and r["durable"] and r["tick"] == last + 1 for r in replies)
    engine.store.close()  # killed here: acknowledged, never applied (kill -9 drops the lock alike)
    assert RunStore.open(run).pending_commands(last) != []
    assert main(["run", "--resume", str(run), "--duration", "1m", "--quiet", "--no-control"]) == 0
    store = RunStore.open(run)
    texts = [r.data["text"] for tr in store.iter_ticks(last + 1) for r in tr.records
             if r.kind == "inject" and r.data["accepted"]]
    assert store.pending_commands(store.last_tick()) == []
    store.close()
    assert len(texts) == 3  # once each: not again on a later resume
    assert all(f"fire drill {i}" in text for i, text in enumerate(texts))


def test_7_accepted_commands_survive_kill_9_of_a_live_run(tmp_path: Path) -> None:
    """The real thing: a live run acknowledges commands, is killed with SIGKILL at once, and is
    resumed; each command is then in the record exactly once (applied before the kill, or after)."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "world.cli", "run", "--mind", "routine", "--agents", "2",
                             "--duration", "2h", "--pace", "20", "--quiet", "--out", str(run),
                             "--start", "2026-03-01 08:00"], cwd=REPO, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not control.is_live(run) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert control.is_live(run), "the run never opened its control channel"
        replies = [control.inject(run, {"kind": "announce", "text": f"drill {i}"}) for i in range(5)]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(r["ok"] and r["durable"] for r in replies), replies
    assert main(["run", "--resume", str(run), "--duration", "1m", "--quiet", "--no-control"]) == 0
    store = RunStore.open(run)
    texts = [r.data["text"] for tr in store.iter_ticks() for r in tr.records
             if r.kind == "inject" and r.data["accepted"]]
    store.close()
    for i in range(5):
        assert sum(f"drill {i}" in text for text in texts) == 1, texts


def test_7_a_fork_does_not_apply_the_pending_commands_of_its_source(recorded: Path, tmp_path: Path) -> None:
    store = RunStore.open(recorded, readonly=False)
    assert store.journal_command(10_000, {"kind": "announce", "text": "not for forks"})
    store.close()
    fork = tmp_path / "fork"
    assert main(["run", "--fork", str(recorded), "--at", "tick:10", "--out", str(fork), "--quiet",
                 "--no-control", "--duration", "1m"]) == 0
    store = RunStore.open(fork)
    assert not [r for tr in store.iter_ticks() for r in tr.records if r.kind == "inject"]
    store.close()
    store = RunStore.open(recorded, readonly=False)
    store.drop_pending()
    store.close()


# -- 8: a failed start leaves nothing ---------------------------------------------------------------


def test_8_a_refused_control_channel_leaves_no_run_file(tmp_path: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tf", dir="/tmp"))  # short: a socket path must fit AF_UNIX
    (tmp / f"townsfolk-{os.getuid()}").mkdir(mode=0o755)  # not private: someone else could listen
    os.chmod(tmp / f"townsfolk-{os.getuid()}", 0o755)
    out = tmp_path / "run"
    env = {k: v for k, v in ENV.items() if k != "XDG_RUNTIME_DIR"} | {"TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "-m", "world.cli", "run", "--mind", "routine", "--duration", "1m",
                           "--quiet", "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "has mode 0755" in done.stderr
    assert not out.exists()
    shutil.rmtree(tmp)


def test_8_resume_of_an_empty_run_db_changes_nothing_and_leaves_no_lock(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.db").write_bytes(b"")
    code, _, err = cli(capsys, "run", "--resume", str(run), "--quiet", "--no-control")
    assert code == 1 and "empty (0 bytes)" in err
    assert (run / "run.db").stat().st_size == 0 and not (run / LOCK_NAME).exists()


# -- 9: messages that say what happened ---------------------------------------------------------------


def test_9_interview_of_an_empty_run_db_says_it_is_empty(tmp_path: Path, capsys) -> None:
    (tmp_path / "run.db").write_bytes(b"")
    code, _, err = cli(capsys, "interview", str(tmp_path), "Tom Alvarez", "hello?", "--model", "scripted")
    assert code == 2 and "empty (0 bytes)" in err and "--mind routine" not in err


def test_9_judge_names_a_folder_and_a_device(tmp_path: Path, capsys) -> None:
    code, out, err = cli(capsys, "judge", str(tmp_path), "/dev/zero", "--out", str(tmp_path / "j"))
    assert f"{tmp_path}: is a folder" in err and "/dev/zero: is not a regular file" in err
    assert "no such file" not in err


def test_9_inject_into_a_starting_run_says_starting_and_json_errors_are_json(tmp_path: Path, capsys) -> None:
    with RunLock.acquire(tmp_path):  # a run building its town: folder locked, no socket yet
        started = time.monotonic()
        code, out, err = cli(capsys, "inject", str(tmp_path), "--announce", "hi", "--timeout", "1", "--json")
    assert code == 2 and "still starting" in err and time.monotonic() - started < 10
    assert json.loads(out)["ok"] is False and "still starting" in json.loads(out)["error"]


# -- 10: a key inside TOWNSFOLK_API_BASE ----------------------------------------------------------------


def test_10_a_key_in_the_api_base_is_never_printed(tmp_path: Path) -> None:
    env = ENV | {"TOWNSFOLK_API_BASE": "http://user:SECRETKEY123@127.0.0.1:9/v1", "OPENAI_API_KEY": "x"}
    done = subprocess.run([sys.executable, "-m", "world.cli", "run", "--model", "openai/nosuch", "--agents", "1",
                           "--duration", "1m", "--quiet", "--no-control", "--out", str(tmp_path / "run")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert "SECRETKEY123" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


# -- 11 and 12: tick length, invisible characters --------------------------------------------------------


def test_11_a_tick_under_a_second_is_refused(capsys) -> None:
    code, _, err = cli(capsys, *ROUTINE, "--seconds-per-tick", "0.0001", "--duration", "10m")
    assert code == 2 and "--seconds-per-tick" in err


def test_12_bidi_and_zero_width_characters_are_refused_in_names_and_commands(tmp_path: Path, recorded: Path,
                                                                              capsys) -> None:
    folder = town_copy(tmp_path)
    people = json.loads((folder / "residents.json").read_text())
    people[0]["name"] = "Tom \u202eAlvarez"
    (folder / "residents.json").write_text(json.dumps(people))
    with pytest.raises(TownError, match=r"U\+202E \(RIGHT-TO-LEFT OVERRIDE\)"):
        load_town(folder)
    engine = _engine(tmp_path)
    for text in ("hi\u200bthere", "evil \u202e txt"):
        result = submit_durably(engine)({"kind": "announce", "text": text})
        assert result.accepted is False and "invisible character" in result.message
    engine.store.close()
    code, _, err = cli(capsys, *ROUTINE, "--model", "\x1b[2Jx", "--out", str(tmp_path / "m"))
    assert code == 2 and "\x1b" not in err


# -- 13: slow clients, floods ------------------------------------------------------------------------------


def test_13_a_client_that_trickles_is_cut_off_and_one_process_gets_a_few_connections(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    monkeypatch.setattr(control, "REQUEST_S", 0.5)
    monkeypatch.setattr(control, "IDLE_S", 3.0)
    monkeypatch.setattr(control, "ACCEPT_WAIT_S", 0.3)
    (tmp_path / "run").mkdir()
    with control.ControlServer(tmp_path / "run", lambda c: None) as server:
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.connect(str(server.path))
        slow.settimeout(5)
        started = time.monotonic()
        reply = b""
        for ch in b'{"op": "ping"':
            try:
                slow.sendall(bytes([ch]))
            except OSError:
                break
            time.sleep(0.1)
            if time.monotonic() - started > 3:
                break
        reply = slow.recv(4096)
        assert b"not complete within" in reply and time.monotonic() - started < 3
        slow.close()
        held = []
        for _ in range(control.MAX_PER_PEER):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(server.path))
            held.append(s)
        time.sleep(0.3)
        reply = control.send(tmp_path / "run", {"op": "ping"}, timeout=3)
        assert reply["ok"] is False and "busy" in reply["error"]
        for s in held:
            s.close()
        time.sleep(0.3)
        assert control.send(tmp_path / "run", {"op": "ping"}, timeout=3)["ok"] is True


def test_13_commands_past_the_per_tick_cap_are_refused_as_busy(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    submit = submit_durably(engine)
    replies = [submit({"kind": "announce", "text": f"news {i}"}) for i in range(MAX_COMMANDS_PER_TICK + 5)]
    engine.store.close()
    accepted = [r for r in replies if r["accepted"]]
    assert len(accepted) == MAX_COMMANDS_PER_TICK
    assert all("busy" in r["error"] for r in replies[MAX_COMMANDS_PER_TICK:])


# -- 14: run-many ----------------------------------------------------------------------------------------------


def test_14_a_batch_child_dies_with_its_parent(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        from world.cli.run_many import _die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"],
                                 preexec_fn=_die_with_parent)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=REPO, env=ENV)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its parent")
    assert callable(_die_with_parent)


def test_14_two_batches_on_one_folder_and_stale_rows(tmp_path: Path, capsys) -> None:
    out = tmp_path / "batch"
    with RunLock.acquire(out):
        code, _, err = cli(capsys, "run-many", "--out", str(out), "--mind", "routine", "--duration", "1m")
    assert code == 2 and "another townsfolk process" in err
    rows = [{"name": "full-seed0", "exit": 1, "error": "killed"},
            {"name": "full-seed0", "exit": 0, "summary": {"health": {"status": "ok", "reasons": []},
                                                          "mind_errors": {"errors": 0, "fallbacks": 2, "calls": 9}}}]
    (out / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    _keep_latest(out / RUNS_FILE)
    kept = [json.loads(line) for line in (out / RUNS_FILE).read_text().splitlines()]
    assert kept == [rows[1]]
    table = markdown(kept)
    assert "{" not in table and "| ok |" in table and "0 errors, 2 fallbacks of 9 calls" in table
