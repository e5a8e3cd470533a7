"""`eval --backend ray` on a real local Ray instance: episodes as Ray tasks, the same records
as the local backend, and a worker process that dies mid-episode (Ray re-runs it, or the
episode is an error record that a resumed batch runs again; results.jsonl stays valid)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.encounters.batch import RESULTS_FILE, BatchConfig, read_results, run_batch
from agents.encounters.metrics import judged

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def kill_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file named after an episode id here makes the next Ray worker that starts that
    episode exit at once (the file is removed first, so it happens once per file)."""
    return tmp_path_factory.mktemp("kill")


@pytest.fixture(scope="module")
def ray_session(kill_dir: Path) -> Iterator[None]:
    """One local Ray instance (2 CPUs, loopback, no dashboard) for the whole module."""
    folder = str(kill_dir)

    def poison_workers() -> None:  # runs in every Ray worker process as it starts
        import os as _os

        from agents.encounters import batch

        original = batch.EpisodeWorker.run

        async def run(self, task):  # type: ignore[no-untyped-def]
            eid = task["episode_id"] if isinstance(task, dict) else task.episode_id
            try:
                _os.unlink(_os.path.join(folder, eid.replace("/", "_")))
            except FileNotFoundError:
                return await original(self, task)
            _os._exit(1)  # the worker process dies mid-episode, as if killed

        batch.EpisodeWorker.run = run

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             runtime_env={"worker_process_setup_hook": poison_workers})
    yield
    ray.shutdown()


def _lines(out: Path) -> list[dict]:
    """Every line of results.jsonl parses (nothing torn or interleaved)."""
    return [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]


def _kill(kill_dir: Path, episode_id: str) -> Path:
    marker = kill_dir / episode_id.replace("/", "_")
    marker.touch()
    return marker


def test_ray_backend_runs_episodes_like_the_local_backend(ray_session, tmp_path: Path) -> None:
    local = run_batch(["builtin:town"], BatchConfig(out=tmp_path / "local", seeds=2))
    on_ray = run_batch(["builtin:town"], BatchConfig(out=tmp_path / "ray", backend="ray", seeds=2))
    assert on_ray.ran == 8 and all(judged(r) for r in on_ray.records)
    pick = lambda rs: sorted((r["episode_id"], r["risky"], tuple(sorted(r["scores"].items()))) for r in rs)
    assert pick(on_ray.records) == pick(local.records)
    assert len(_lines(tmp_path / "ray")) == 8
    again = run_batch(["builtin:town"], BatchConfig(out=tmp_path / "ray", backend="ray", seeds=2))
    assert again.ran == 0 and again.skipped == 8


def test_ray_reruns_an_episode_whose_worker_died(ray_session, kill_dir: Path, tmp_path: Path) -> None:
    first = run_batch(["builtin:town"], BatchConfig(out=tmp_path / "probe", backend="ray"))
    victim = first.records[1]["episode_id"]
    marker = _kill(kill_dir, victim)
    outcome = run_batch(["builtin:town"], BatchConfig(out=tmp_path / "run", backend="ray"))
    assert not marker.exists(), "the worker running the episode was not killed"
    assert outcome.ran == 4 and all(judged(r) for r in outcome.records)
    assert [r["episode_id"] for r in _lines(tmp_path / "run")].count(victim) == 1


def test_killed_worker_without_retries_is_an_error_that_resume_reruns(
    ray_session, kill_dir: Path, tmp_path: Path
) -> None:
    config = BatchConfig(out=tmp_path, backend="ray", seeds=2, ray_max_retries=0)
    probe = run_batch(["builtin:town"], config.model_copy(update={"out": tmp_path / "probe"}))
    victim = probe.records[2]["episode_id"]
    _kill(kill_dir, victim)
    first = run_batch(["builtin:town"], config)
    errors = [r for r in first.records if r.get("error")]
    assert [r["episode_id"] for r in errors] == [victim]
    assert errors[0]["error"].startswith("ray task failed:")
    assert len(_lines(tmp_path)) == 8
    resumed = run_batch(["builtin:town"], config)
    assert resumed.ran == 1 and resumed.skipped == 7
    assert all(judged(r) for r in read_results(tmp_path / RESULTS_FILE).values())
    assert len(_lines(tmp_path)) == 9  # the error line is kept; the newer record wins
    assert os.listdir(kill_dir) == []


def test_run_many_runs_towns_as_ray_tasks(ray_session, tmp_path: Path, capsys) -> None:
    from world.cli import main as cli

    out = tmp_path / "batch"
    code = cli(["run-many", "--backend", "ray", "--out", str(out), "--seeds", "0", "1",
                "--ablations", "full", "no_observation", "--mind", "routine", "--agents", "2",
                "--duration", "10m", "--json"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and result["failed"] == []
    names = ["full-seed0", "full-seed1", "no_observation-seed0", "no_observation-seed1"]
    assert [t["town"] for t in result["towns"]] == names
    assert all(t["ticks"] == 60 for t in result["towns"])
    assert all((out / name).is_dir() for name in names)
