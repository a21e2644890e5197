"""What ``ccbridge ab`` says of its runs: each scenario's two runs compared (``Pair``,
``compare_pair``), and the report — text, ``--json``, the per-scenario progress line —
opened by one verdict line (``verdict``): the client would see the same session, or how
many differences it would see and where.

A difference the replay itself causes is not the backends': a scenario made from a
recording lists the calls whose results it cannot reproduce (``[replay]``,
``analysis.replay_diffs``), and the differences found in their results are counted apart
("from the replay"). A pair whose every difference comes from the replay counts as the
same session (exit 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from analysis.contract import Violation, counts
from analysis.diff import DiffResult, format_text
from analysis.diff import to_json as diff_json
from analysis.replay_diffs import REASON, replay_caused
from compat.capture import Capture, CaptureError, parse_exit
from compat.capture import load as load_capture
from compat.exits import Exit
from compat.text import escape, escape_json
from harness.scenario import Differs

if TYPE_CHECKING:
    from analysis.ab_cmd import Outcome

EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE
#: the profile whose client speaks cbc (its sides are checked against cbc's contract)
REVERSE = "claude-to-cbc"
KNOWN_DIFFERENCES = Path(__file__).resolve().parent / "data" / "known_differences.toml"


@attrs.frozen
class Pair:
    name: str
    a: Outcome
    b: Outcome
    result: DiffResult | None = None
    violations: tuple[list[Violation], list[Violation]] = ([], [])
    items: list[Any] = attrs.Factory(list)  # conformance.Item, with --explain
    error: str | None = None
    #: the differences (indices) the replay of a recording causes, not the backends
    replayed: frozenset[int] = frozenset()

    @property
    def differences(self) -> int:
        """How many differences the backends make (the replay's not counted)."""
        return 0 if self.result is None else len(self.result.differences) - len(self.replayed)

    @property
    def same(self) -> bool:
        """Compared, and the client would see the same session."""
        return self.result is not None and not self.error and not self.differences


def read(path: Path) -> Capture:
    """The capture at ``path`` (``compat.capture.load``: what a capture is), or a
    ``CaptureError`` that names the file."""
    try:
        return load_capture(str(path))
    except CaptureError as e:
        raise CaptureError(f"{path}: {e}") from None


def load_known_default(path: Path | None = None) -> Any:
    from analysis import conformance

    p = path or KNOWN_DIFFERENCES
    return conformance.load_known(p.read_text(encoding="utf-8"), str(p))


def compare_pair(name: str, a: Outcome, b: Outcome, explain: bool = False) -> Pair:
    if not a.ok or not b.ok:
        return Pair(
            name,
            a,
            b,
            error="; ".join(f"{side}: {o.error}" for side, o in (("A", a), ("B", b)) if o.error),
        )
    from analysis import conformance

    try:
        ca, cb = read(a.job.out), read(b.job.out)
    except (OSError, CaptureError) as e:
        return Pair(name, a, b, error=f"cannot read a capture: {e}")
    cmp = conformance.compare(ca, cb)
    items: list[Any] = []
    if explain:
        known = load_known_default()
        items = conformance.explain(cmp, name, known).items
    violations = (cmp.violations_a, cmp.violations_b)
    if REVERSE in (a.job.side.via, b.job.side.via):  # the clients speak cbc: cbc's contract
        from analysis import contract_cbc

        violations = (contract_cbc.check(ca), contract_cbc.check(cb))
    caused = replay_caused(cmp.diff, replay_differs(a))
    return Pair(name, a, b, cmp.diff, violations, items, replayed=caused)


def replay_differs(o: Outcome) -> tuple[Differs, ...]:
    """The calls the scenario (made from a recording) says the replay cannot reproduce."""
    replay = getattr(o.job.scenario, "replay", None)  # (a test's job may have no scenario)
    return replay.differs if replay is not None else ()


# -- the verdict ----------------------------------------------------------------------------
def verdict(pairs: Sequence[Pair]) -> str:
    """The report in one line: the same session, or the differences the client would see,
    and how many more the replay causes."""
    if not pairs:
        return "verdict: nothing was compared"
    errors = sum(1 for p in pairs if p.error or p.result is None)
    differ = [p for p in pairs if not p.same and not p.error and p.result is not None]
    one = len(pairs) == 1
    if errors:
        what = f"{errors} of {len(pairs)} scenario(s) could not be compared"
    elif not differ:
        what = (
            "the client would see the same session"
            if one
            else (f"the clients would see the same sessions in all {len(pairs)} scenarios")
        )
    else:
        n = sum(p.differences for p in differ)
        what = f"the client would see {n} difference{'s' * (n != 1)}"
        what += "" if one else f" in {len(differ)} of {len(pairs)} scenarios"
    return f"verdict: {what}{_replay_note(pairs)}{_contract_note(pairs)}"


def _replay_note(pairs: Sequence[Pair]) -> str:
    k = sum(len(p.replayed) for p in pairs)
    if not k:
        return ""
    verb = "comes" if k == 1 else "come"
    return f" ({k} more {verb} from the replay: tool results that read what the recording lacks)"


def _contract_note(pairs: Sequence[Pair]) -> str:
    va = sum(len(p.violations[0]) for p in pairs)
    vb = sum(len(p.violations[1]) for p in pairs)
    return f"; contract violations: A {va}, B {vb}" if va + vb else ""


def exit_status(pairs: Sequence[Pair]) -> int:
    if any(p.error or p.result is None for p in pairs):
        return EXIT_ERROR
    return EXIT_SAME if all(p.same for p in pairs) else EXIT_DIFFERENT


# -- text ---------------------------------------------------------------------------------
def _contract_line(side: str, vs: list[Violation]) -> str:
    if not vs:
        return f"contract {side}: no violations"
    c = ", ".join(f"{k}: {n}" for k, n in counts(vs).items())
    return escape(f"contract {side}: {len(vs)} violation(s) ({c})")


def _run_line(side: str, o: Outcome) -> str:
    """The run of one side, escaped (its backend's version, its error can be anything)."""
    r = o.result
    ver = f" {r.backend_version}" if r and r.backend_version else ""
    if r is None:
        return escape(f"{side}: {o.job.side.describe()}: {o.error}")
    return escape(
        f"{side}: {o.job.side.describe()}{ver}: exit {r.exit} after {r.duration:.1f}s, "
        f"{len(r.frames)} frames -> {o.job.out}"
    )


def _pair_text(p: Pair, color: bool) -> list[str]:
    out = [f"== {escape(p.name)}", _run_line("A", p.a), _run_line("B", p.b)]
    if p.error or p.result is None:
        return [*out, f"error: {escape(p.error or 'no result')}"]
    names = (str(p.a.job.out), str(p.b.job.out))
    out.append(format_text(p.result, color=color, names=names).rstrip("\n"))
    out += [_contract_line("A", p.violations[0]), _contract_line("B", p.violations[1])]
    if p.replayed:
        out.append(f"from the replay ({REASON}):")
        out += [f"  {escape(p.result.differences[i].path)}" for i in sorted(p.replayed)]
    if p.items:
        out.append("reasons:")
        out += [f"  {escape(i.path)}: {escape(i.reason)}" for i in p.items]
    return out


def report_text(pairs: Sequence[Pair], color: bool = False) -> str:
    """The pairs' report, its verdict first; every string from a run, a capture or a
    scenario escaped."""
    out = [escape(verdict(pairs))]
    for p in pairs:
        out += _pair_text(p, color)
    if len(pairs) > 1:
        same = sum(1 for p in pairs if p.same)
        errs = sum(1 for p in pairs if p.error or p.result is None)
        out.append(
            f"{len(pairs)} scenario(s): {same} the same session, "
            f"{len(pairs) - same - errs} different, {errs} error(s)"
        )
    return "\n".join(out) + "\n"


def summary_line(p: Pair) -> str:
    """One line for a finished scenario: the verdict, each side's run and contract."""

    def run(side: str, o: Outcome) -> str:
        r = o.result
        if r is None:
            return f"{side} {o.job.side.describe()}: {o.error}"
        ver = f" {r.backend_version}" if r.backend_version else ""
        return f"{side} {o.job.side.describe()}{ver} exit {r.exit} {r.duration:.1f}s"

    if p.error or p.result is None:
        what = f"error ({p.error or 'no result'})"
    elif p.same:
        what = "equivalent"
    else:
        n = p.differences
        kinds = ", ".join(f"{k} {v}" for k, v in p.result.summary.get("kinds", {}).items())
        what = f"{n} difference{'s' * (n != 1)} ({kinds})"
    if p.replayed:
        what += f" + {len(p.replayed)} from the replay"
    contract = ""
    if p.result is not None:
        contract = f" · contract A {len(p.violations[0])}, B {len(p.violations[1])} violation(s)"
    return f"{p.name}: {what} · {run('A', p.a)} · {run('B', p.b)}{contract}"


# -- JSON ---------------------------------------------------------------------------------
def _side_json(o: Outcome) -> dict[str, Any]:
    r = o.result
    return {
        "spec": o.job.side.spec,
        "via": o.job.side.via,
        "capture": str(o.job.out),
        "error": o.error,
        # a number (128 + N for a signal; null when the record says neither), and the
        # capture's exit record as written ("0", "killed:-9", "sigterm-by-harness:0")
        "exit": parse_exit(r.exit) if r else None,
        "exit_text": r.exit if r else None,
        "duration": round(r.duration, 3) if r else None,
        "backend_version": r.backend_version if r else None,
    }


def _pair_json(p: Pair) -> dict[str, Any]:
    d: dict[str, Any] = {
        "scenario": p.name,
        "a": _side_json(p.a),
        "b": _side_json(p.b),
        "error": p.error,
    }
    if p.result is None:
        return d
    d["equivalent"] = p.result.equivalent
    d["same_session"] = p.same
    d["diff"] = orjson.loads(diff_json(p.result, (str(p.a.job.out), str(p.b.job.out))))
    d["from_replay"] = [p.result.differences[i].path for i in sorted(p.replayed)]
    for k, vs in zip(("a", "b"), p.violations, strict=True):
        d[k]["contract"] = {
            "ok": not vs,
            "counts": counts(vs),
            "violations": [v.to_dict() for v in vs],
        }
    if p.items:
        d["reasons"] = [i.to_dict() for i in p.items]
    return d


def report_json(pairs: Sequence[Pair], out_dir: Path) -> str:
    doc = {
        "verdict": verdict(pairs),
        "out": str(out_dir),
        "equivalent": all(p.result is not None and p.result.equivalent for p in pairs),
        "same_session": all(p.same for p in pairs),
        "scenarios": [_pair_json(p) for p in pairs],
    }
    return escape_json(orjson.dumps(doc).decode())
