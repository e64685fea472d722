"""The stop-reason table: every reason the API gives has a meaning the loop acts on."""

from __future__ import annotations


def test_the_stop_reason_table_covers_every_reason_the_sdk_knows() -> None:
    """One table says what each stop reason means; a reason the SDK adds must be decided."""
    import typing

    from anthropic.types import StopReason
    from anthropic.types.beta import BetaStopReason

    from jupyter_agent.agent.agent import STOP_REASONS

    known = set(typing.get_args(StopReason)) | set(typing.get_args(BetaStopReason))
    assert known <= set(STOP_REASONS), known - set(STOP_REASONS)
