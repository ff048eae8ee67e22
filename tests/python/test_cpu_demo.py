"""The CPU demo (`python -m aiter demo --device cpu`): it passes its own float64
check, and that check runs after the timed op calls, not between them.

The check's NumPy matmuls leave OpenBLAS's threads spinning for a while after
each call; a decode step timed right after one shared the two CPUs with them
(docs/performance_cpu.md), so the demo timed its own check as much as the
library."""
import contextlib
import io
import re

import pytest

demo = pytest.importorskip("aiter.cli.demo")


def _run_recording(monkeypatch, decode_steps):
    events = []
    timer_call = demo.OpTimer.__call__
    reference_forward = demo.ReferenceLayer.forward

    def timed(self, name, fn, *args, **kwargs):
        events.append(("op", name))
        return timer_call(self, name, fn, *args, **kwargs)

    def checked(self, seq, x, positions):
        events.append(("check", seq))
        return reference_forward(self, seq, x, positions)

    monkeypatch.setattr(demo.OpTimer, "__call__", timed)
    monkeypatch.setattr(demo.ReferenceLayer, "forward", checked)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = demo.run(decode_steps=decode_steps, device="cpu")
    return status, out.getvalue(), events


def test_demo_passes_and_checks_after_the_timed_calls(monkeypatch):
    status, text, events = _run_recording(monkeypatch, decode_steps=2)
    assert status == 0, text
    assert "PASS" in text
    kinds = [kind for kind, _ in events]
    ops = kinds.count("op")
    # 10 op calls a layer pass: the prefill and each decode step.
    assert ops == 10 * 3
    # Every op call comes before the first reference step: no check in between.
    assert kinds == ["op"] * ops + ["check"] * (len(kinds) - ops)
    # The check covers the prefill (one reference pass per sequence) and every decode step.
    sequences = len(demo.CONFIG["prompt_lens"])
    assert kinds.count("check") == sequences * 3
    assert len(re.findall(r"decode step \d", text)) == 2
