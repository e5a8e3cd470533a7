"""bench local's accounting: prefix reuse with the KV cache off and on, per-call summaries, options."""

from __future__ import annotations

import argparse

import pytest

from world.cli.args import count_or_all
from world.cli.bench_local import (CallFigures, _modes, by_purpose, prefix_reuse, progress_line,
                                   quickstart_estimate, summarise)

PERSONA_A = list(range(100, 160))  # 60 tokens: one resident's system line and persona
PERSONA_B = list(range(100, 110)) + list(range(300, 350))  # shares only the system line


def test_the_cache_brings_back_a_residents_prefix_after_another_residents_call() -> None:
    prompts = [PERSONA_A + [1, 2, 3], PERSONA_B + [4, 5], PERSONA_A + [7, 8]]
    sent, off, on = prefix_reuse(prompts)
    assert sent == 63 + 62 + 62
    assert off == 63 + 52 + 52  # off: only the system line shared with the previous prompt
    assert on == 63 + 52 + 2  # on: A's second call evaluates only its own two new tokens


def test_an_identical_prompt_still_evaluates_its_last_token() -> None:
    _, off, on = prefix_reuse([PERSONA_A, PERSONA_A])
    assert off == on == 60 + 1


def _call(purpose: str, cpu: float, evaluated: int) -> CallFigures:
    return CallFigures(purpose=purpose, prompt_tokens=400, evaluated=evaluated, generated=50, wall_s=cpu * 2,
                       cpu_s=cpu, prompt_cpu_s=cpu / 2, decode_cpu_s=cpu / 4, sample_cpu_s=cpu / 8)


def test_a_summary_reports_cpu_per_call_prefix_reuse_and_where_the_cpu_went() -> None:
    calls = [_call("react", 8.0, 400), _call("importance", 4.0, 100)]
    summary = summarise(calls)
    assert summary["calls"] == 2
    assert summary["cpu_s_per_call"] == 6.0
    assert summary["prefix_reuse"] == pytest.approx(300 / 800, abs=1e-3)
    assert (summary["cpu_share_prompt"], summary["cpu_share_decode"], summary["cpu_share_sample"]) == (0.5, 0.25, 0.125)
    assert summary["cpu_ms_per_evaluated_token"] == pytest.approx(1000 * 6.0 / 500, abs=0.1)
    assert by_purpose(calls)["importance"].startswith("1 calls, cpu 4.00 s/call, prompt 400 -> evaluated 100")
    assert summarise([]) == {"calls": 0}


def test_a_progress_line_names_the_call_and_its_costs() -> None:
    line = progress_line("on", 3, 40, _call("decompose", 8.0, 312))
    assert line.startswith("[kv on 3/40] decompose")
    assert "evaluated  312" in line and "cpu  8.00 s" in line


def test_the_estimate_divides_cpu_by_the_cores_that_share_a_call() -> None:
    assert quickstart_estimate(6.0, 60, threads=2, parallel_efficiency=0.75) == 240
    assert quickstart_estimate(6.0, 60, threads=1) == 360


@pytest.mark.parametrize("text", ["-1", "many"])
def test_bad_call_counts_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected"):
        count_or_all(text)


def test_modes_are_off_on_or_both() -> None:
    assert _modes("on") == ("on",)
    assert _modes("on,off") == ("on", "off")
    for bad in ("warm", "", "on,on"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected off, on or off,on"):
            _modes(bad)
