"""``ControlState.turn_interrupted``: one fact, "an interrupt's receipt arrived while the
running turn ran", kept by ``control-state`` and read by ``command-lifecycle`` (just before
control-state, at the result it has not processed yet). Each rule is fed alone
(``compat.playbook``) with the fact scripted: a rule that went back to a private flag of
its own would not follow it. (``init-once`` and ``interrupted-turn`` judge receipts on
their own view of the stream: their class docstrings say why.)"""

from __future__ import annotations

from typing import Any

from compat.playbook import Out, Playbook, outs

from .control_support import cbc_init
from .tasks_support import SID
from .test_max_turns_loop import receipt

LINE = "11111111-1111-4111-8111-111111111111"


def assistant(*content: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "session_id": SID,
        "uuid": "a-1",
        "parent_tool_use_id": None,
        "message": {"id": "m-1", "content": list(content)},
    }


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool_use(use: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": use, "name": "Bash", "input": {}}


def tool_result(use: str) -> dict[str, Any]:
    return {
        "type": "user",
        "session_id": SID,
        "uuid": "u-1",
        "parent_tool_use_id": None,
        "message": {"content": [{"type": "tool_result", "tool_use_id": use, "content": "ok"}]},
    }


def result(**over: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done.",
        "session_id": SID,
        "uuid": "r-1",
        **over,
    }


# -- control-state keeps it -------------------------------------------------------------------


def test_control_state_marks_the_running_turn_at_a_receipt_and_keeps_it_past_its_result() -> None:
    pb = Playbook("control-state", facts={"session_id": SID})
    pb.frame(receipt("stop-0"))  # idle: no turn runs, nothing is interrupted
    assert pb.state.control.turn_interrupted is False
    pb.frame(cbc_init(SID))
    pb.frame(assistant(text("working")))
    assert pb.state.control.turn_interrupted is False
    pb.frame({"type": "control_response", "response": {"subtype": "success", "request_id": "x"}})
    assert pb.state.control.turn_interrupted is False  # (no interrupt's receipt)
    pb.frame(receipt("stop-1"))
    assert (pb.state.control.turn_active, pb.state.control.turn_interrupted) == (True, True)
    pb.frame(result())
    # the turn ended; what happened in it still holds for the rules after control-state
    assert (pb.state.control.turn_active, pb.state.control.turn_interrupted) == (False, True)
    pb.frame(receipt("stop-2"))  # idle again
    pb.frame(cbc_init(SID))  # the next turn starts: not interrupted
    assert (pb.state.control.turn_active, pb.state.control.turn_interrupted) == (True, False)


def test_control_state_knows_a_receipt_by_the_interrupt_the_bridge_forwarded() -> None:
    from compat.session import Interrupt

    pb = Playbook("control-state", facts={"session_id": SID})
    pb.state.control.interrupts["stop-1"] = Interrupt("stop-1")
    pb.frame(cbc_init(SID))
    reply = {"type": "control_response", "response": {"subtype": "success", "request_id": "stop-1"}}
    pb.frame(reply)  # (no body of cbc's receipt shape: the id is the interrupt's)
    assert pb.state.control.turn_interrupted is True


# -- command-lifecycle reads it at the result, before control-state ends the turn -----------


def lifecycle_at_result(facts: dict[str, Any]) -> list[Any]:
    """The frames command-lifecycle writes for a line's turn: its start (an init), then,
    with ``facts`` set as control-state leaves them meanwhile, its result."""
    pb = Playbook("command-lifecycle", facts={"session_id": SID, "control.pending_user": [LINE]})
    got = outs(pb.frame(cbc_init(SID)))
    assert [f.get("state") for f in got] == ["started", None]
    pb.set_facts({"control.turn_active": True, "control.pending_user": [], **facts})
    return outs(pb.frame(result()))


def test_command_lifecycle_cancels_the_line_when_the_fact_says_interrupted() -> None:
    done = lifecycle_at_result({})
    cancelled = lifecycle_at_result({"control.turn_interrupted": True})
    assert [f.get("state") for f in done] == [None, "completed"]
    assert done[0]["user_message_uuid"] == LINE
    assert [f.get("state") for f in cancelled] == [None, "cancelled"]
    assert "user_message_uuid" not in cancelled[0]


def test_command_lifecycle_judges_no_receipt_itself() -> None:
    """A receipt is control-state's to judge: the rule does not even see it."""
    pb = Playbook("command-lifecycle", facts={"session_id": SID, "control.pending_user": [LINE]})
    pb.frame(cbc_init(SID))
    pb.set_facts({"control.turn_active": True, "control.pending_user": []})
    assert pb.frame(receipt("stop-1")) == [Out(receipt("stop-1"))]
    assert [f.get("state") for f in outs(pb.frame(result()))] == [None, "completed"]


def test_command_lifecycle_reads_no_last_turns_fact_at_a_result_that_starts_its_turn() -> None:
    """A result that is its turn's first frame: control-state has not started (and cleared)
    that turn yet, so the fact still tells the last turn's."""
    pb = Playbook(
        "command-lifecycle",
        facts={"session_id": SID, "control.pending_user": [LINE], "control.turn_interrupted": True},
    )
    assert [f.get("state") for f in outs(pb.frame(result()))] == ["started", None, "completed"]


# -- interrupted-turn reads it after control-state ----------------------------------------------
