"""Evaluate's bars say how long the rest takes, at the pace so far (issue 36, item 10: "Evaluate shows no time
left")."""

from __future__ import annotations

import time

from workbench.app.progress import bar_with_time_left


class _Bar:
    """What st.progress offers a callback: `progress(value, text)`; every call kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []

    def progress(self, value: float, text: str) -> None:
        self.calls.append((value, text))


def test_the_bar_says_the_time_left_from_the_second_step_on() -> None:
    bar = _Bar()
    advanced = bar_with_time_left(bar, "queries")
    advanced(1, 50)
    time.sleep(0.2)
    advanced(2, 50)
    advanced(50, 50)
    (v1, t1), (v2, t2), (v3, t3) = bar.calls
    assert (v1, t1) == (0.02, "1 of 50 queries")  # one step says little about the pace
    assert v2 == 0.04 and t2.startswith("2 of 50 queries · about ") and t2.endswith(" s left")
    seconds = float(t2.removeprefix("2 of 50 queries · about ").removesuffix(" s left"))
    assert 4 <= seconds <= 60  # 48 more at about 0.1 s each, as measured (a loaded machine is slower)
    assert (v3, t3) == (1.0, "50 of 50 queries")
