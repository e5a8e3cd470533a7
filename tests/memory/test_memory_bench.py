"""The retrieval benchmark's shape (not its timings): keys per size, recall, bad --sizes."""

from __future__ import annotations

import argparse

import pytest

from world.cli import bench_retrieval


def _args(**kw):
    parser = argparse.ArgumentParser()
    bench_retrieval.add_arguments(parser)
    args = parser.parse_args([])
    for k, v in kw.items():
        setattr(args, k, v)
    return args


def test_bench_reports_speedup_and_recall_per_size():
    out = bench_retrieval.run(_args(sizes="500,1500", queries=5, loop_size=500, k=10))
    assert set(out["sizes"]) == {"500", "1500"}
    for row in out["sizes"].values():
        assert row["speedup"] > 0 and 0.9 <= row["recall"] <= 1.0
    assert out["sizes"]["500"]["python_loop_p50_ms"] > 0


def test_bad_sizes_are_refused():
    with pytest.raises(SystemExit, match="--sizes 'ten'"):
        bench_retrieval.parse_sizes("ten")
