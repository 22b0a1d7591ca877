"""Calibrating the approximate counter from provider-reported usage (issue 13, item 3).

A coding-agent session reports, per model call, what the prompt cost (input + cache writes +
cache reads: :class:`~convmem.agent_sessions.ReportedUsage`). convmem counts the same prompt as
the messages in context (since the agent's last compaction). The model fitted, per call ``t``::

    reported_t ~= ratio * content_t + per_message_overhead * messages_t + base_tokens

where ``content_t`` is the content-only approximate count (:class:`~convmem.ApproxCounter`,
``per_message_overhead=0``: content plus each call's name and arguments) of the ``messages_t``
messages in context, and ``base_tokens`` is what every prompt holds outside the transcript (the
agent's system prompt and tool definitions, which session files do not record). The three
numbers are fitted by ordinary least squares (``numpy.linalg.lstsq``); with fewer than three
independent calls, the overhead (then the base) is dropped from the fit.

:class:`Calibration` also says how far convmem's count is from the provider's, measured: the mean
and largest absolute relative error over the calls, of convmem's count as loaded (``before``) and
of the fitted model (``after``). :meth:`Calibration.counter` is a counter applying the fit
(ratio and per-message overhead; the base is per prompt, not per message).

>>> samples = [(c, n, round(1.25 * c + 4 * n + 3000)) for c, n in [(100, 2), (900, 7), (5000, 40),
...                                                              (7000, 41), (12000, 90)]]
>>> cal = fit_calibration(samples)
>>> round(cal.ratio, 3), round(cal.per_message_overhead, 2), round(cal.base_tokens)
(1.25, 4.0, 3000)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .agent_sessions import context_start, session_of
from .conversations import Conversation
from .tokens import ApproxCounter

__all__ = ["CalibratedCounter", "Calibration", "CalibrationSample", "calibrate",
           "calibration_samples", "fit_calibration"]


@dataclass(frozen=True, slots=True)
class CalibrationSample:
    """One reported call: ``content`` (approximate content-only tokens of the prompt's messages),
    ``messages`` (how many), ``reported`` (the provider's prompt tokens) and ``counted``
    (convmem's count as loaded: the sum of the messages' tokens)."""

    content: int
    messages: int
    reported: int
    counted: int = 0


@dataclass(frozen=True, slots=True)
class Calibration:
    """The fitted model and how far convmem's count is from the provider's.

    Attributes:
        ratio: provider tokens per approximate content token.
        per_message_overhead: provider tokens per message beyond its content.
        base_tokens: provider tokens every prompt holds outside the transcript.
        calls: how many reported calls were fitted.
        error_before: mean ``|counted - reported| / reported`` of convmem's count as loaded
            (None when the samples carry no ``counted``).
        max_error_before: the largest such error.
        error_after: mean ``|fitted - reported| / reported`` of the fitted model.
        max_error_after: the largest such error.
    """

    ratio: float
    per_message_overhead: float
    base_tokens: float
    calls: int
    error_before: float | None
    max_error_before: float | None
    error_after: float
    max_error_after: float

    def predict(self, content: float, messages: int) -> float:
        """The fitted prompt tokens of ``messages`` messages of ``content`` approximate tokens."""
        return self.ratio * content + self.per_message_overhead * messages + self.base_tokens

    def make_counter_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`convmem.make_counter` closest to the fit (the overhead
        rounded; the ratio has no make_counter argument: use :meth:`counter` for it)."""
        return {"approximate": True, "per_message_overhead": max(0, round(
            self.per_message_overhead))}

    def counter(self) -> CalibratedCounter:
        """A counter applying the fitted ratio and per-message overhead."""
        return CalibratedCounter(self.ratio, self.per_message_overhead)


class CalibratedCounter:
    """``round(ratio * content-only approximate count + per_message_overhead)`` per message
    (the :class:`~convmem.tokens.TokenCounter` protocol). ``exact`` is False."""

    __slots__ = ("ratio", "overhead", "_inner", "per_message_overhead", "reply_priming")
    name = "calibrated-approx"
    exact = False

    def __init__(self, ratio: float, per_message_overhead: float) -> None:
        if not ratio > 0:
            raise ValueError(f"ratio must be positive, got {ratio!r}")
        self.ratio = float(ratio)
        self.overhead = max(0.0, float(per_message_overhead))
        self._inner = ApproxCounter(per_message_overhead=0)
        self.per_message_overhead = round(self.overhead)
        self.reply_priming = 0

    @property
    def detail(self) -> str:
        return (f"approximation calibrated on reported usage: x{self.ratio:.3f} + "
                f"{self.overhead:.1f} per message")

    def count_text(self, text: str) -> int:
        return round(self.ratio * self._inner.count_text(text))

    def count_message(self, role: str, content: str | None, tool_calls: Iterable[Any] = (), *,
                      name: str | None = None, images: Sequence[Any] = ()) -> int:
        n = self._inner.count_message(role, content, tool_calls, name=name, images=images)
        return round(self.ratio * n + self.overhead)


def _errors(pred: Sequence[float], reported: Sequence[int]) -> tuple[float, float]:
    errs = [abs(p - r) / r for p, r in zip(pred, reported) if r]
    return (sum(errs) / len(errs), max(errs)) if errs else (0.0, 0.0)


def fit_calibration(samples: Iterable[CalibrationSample | tuple[int, int, int]]
                    ) -> Calibration:
    """Fit ratio, per-message overhead and base tokens by least squares. O(samples).

    Args:
        samples: :class:`CalibrationSample` values or ``(content, messages, reported)`` tuples.

    Raises:
        ValueError: fewer than two samples, or the samples cannot determine a ratio (every
            content the same).
    """
    import numpy as np

    rows = [s if isinstance(s, CalibrationSample) else CalibrationSample(*s) for s in samples]
    if len(rows) < 2:
        raise ValueError(f"calibration needs at least 2 reported calls, got {len(rows)}")
    c = np.array([r.content for r in rows], dtype=float)
    n = np.array([r.messages for r in rows], dtype=float)
    y = np.array([r.reported for r in rows], dtype=float)
    one = np.ones_like(c)
    for cols, names in (((c, n, one), ("r", "o", "b")), ((c, one), ("r", "b")), ((c,), ("r",))):
        a = np.column_stack(cols)
        if np.linalg.matrix_rank(a) == len(cols):
            coef = np.linalg.lstsq(a, y, rcond=None)[0]
            break
    else:
        raise ValueError("the reported calls cannot determine a ratio (no content counted)")
    got = dict(zip(names, (float(x) for x in coef)))
    ratio, overhead, base = got.get("r", 0.0), got.get("o", 0.0), got.get("b", 0.0)
    if not ratio > 0:
        raise ValueError(f"the fitted ratio is not positive ({ratio:.4g}): the reported usage "
                         "does not follow the messages' content")
    pred = ratio * c + overhead * n + base
    after, max_after = _errors(pred.tolist(), [r.reported for r in rows])
    before = max_before = None
    if any(r.counted for r in rows):
        before, max_before = _errors([r.counted for r in rows], [r.reported for r in rows])
    return Calibration(ratio, overhead, base, len(rows), before, max_before, after, max_after)


def calibration_samples(conv: Conversation, counter: Any = None) -> list[CalibrationSample]:
    """One sample per reported call of ``conv`` (empty for a conversation with no session).

    ``counter`` (default: ``ApproxCounter(per_message_overhead=0)``) recounts each message
    content-only from its content and calls (images are not kept on messages: not recounted).
    Calls whose prompt holds no message are left out. O(messages + calls).
    """
    session = session_of(conv)
    if session is None or not session.usage:
        return []
    counter = ApproxCounter(per_message_overhead=0) if counter is None else counter
    calls: dict[str, list[tuple[str, str]]] = {}
    for tc in conv.tool_calls:
        calls.setdefault(tc.message_id, []).append((tc.name, tc.arguments))
    roles = conv.provider_roles
    content = [0]
    counted = [0]
    for i, m in enumerate(conv.messages):
        role = roles[i] if roles else m.role
        content.append(content[-1] + counter.count_message(role, m.content,
                                                           calls.get(m.id, ())))
        counted.append(counted[-1] + m.tokens)
    out = []
    total = len(conv.messages)
    for u in session.usage:
        end = min(u.index, total)
        start = min(context_start(session, end), end)
        if end > start:
            out.append(CalibrationSample(content[end] - content[start], end - start,
                                         u.prompt_tokens, counted[end] - counted[start]))
    return out


def calibrate(conversations: Conversation | Iterable[Conversation],
              counter: Any = None) -> Calibration:
    """Fit the approximate counter to the usage reported in coding-agent sessions.

    Args:
        conversations: one conversation or several (read by the ``claude-code`` / ``codex-cli``
            importers); their calls are fitted together (sidechains run with another system
            prompt: pass them apart).
        counter: the content-only counter to calibrate (default the approximate one).

    Returns:
        a :class:`Calibration`. O(messages + calls).

    Raises:
        ValueError: fewer than two reported calls with messages in their prompt.
    """
    convs = [conversations] if isinstance(conversations, Conversation) else list(conversations)
    samples: list[CalibrationSample] = []
    for conv in convs:
        samples.extend(calibration_samples(conv, counter))
    return fit_calibration(samples)
