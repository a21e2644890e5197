"""Semantic diff of two captures: what a client saw on side A against side B.

``diff(a, b, options) -> DiffResult`` (``.equivalent``, ``.differences``: ``Difference(path,
a, b, kind)``, kind ``changed``/``only-a``/``only-b``), for ``ccbridge diff``, the A/B
command and the conformance table. Pure.

Each side is its ``Capture.client_view()``, parsed and masked so that two runs of one
scenario compare equal (ids numbered by first appearance, clocks, durations, costs, token
counts, paths under cwd/HOME/tmp, model names: ``analysis.diffside``), then aligned, then
compared key by key (key sets, then masked values).

Alignment: a turn is the frames up to and including a ``result`` (what follows the last one
is "after turn N"; a turn followed by lone results holds that many more turns that started
before its result, and is cut before its last main-session inits: ``diffside._unfold``);
turns pair by index and, inside a turn, frames pair by signature
(``type`` or ``system/<subtype>``, ``control_request/<subtype>``, a ``system/init`` of
another session marked) with difflib, leaving frames present on one side only. Task frames
and the ``background_tasks_changed`` snapshots before them form one lifecycle per task,
outside the turns: background frames interleave with turns by timing. Tasks pair by
(task_type, workflow_name or description) in start order, then by task_type, then by start
turn, never by id. Per pair: the lifecycle shape (snapshot/started/progress/updated(status)/
notification(status), consecutive progress frames collapsed: their count is timing), the
first ``task_started``, the last ``task_progress`` (its ``workflow_progress`` phases by
index, agents by phase and label: states, labels, phases, not the intermediate snapshots),
the terminal ``task_updated``, the last ``task_notification``, the turn each arrived in,
and the snapshots pairwise. A difference's path starts with the turn of A's frame.

Default ignorable keys (``DEFAULT_OPAQUE``): present/absent and JSON type are compared, the
content is not. They are inventories of the installation or the CLI, not behaviour a
client relies on: init ``tools``/``slash_commands``/``mcp_servers``/``skills``/``plugins``/
``agents``/``capabilities``, initialize ``commands``/``models``/``account``/
``available_output_styles``, and ``usage``/``modelUsage`` (token accounting whose numbers
are masked anyway; their shape is ``contract``'s business, result-shape). Not in the set:
``permission_denials`` (what the permission-routing rule produces), ``message.id`` and
``model`` (masked rather than ignored, so their presence still counts). ``ignore`` drops
keys entirely (presence too); an entry is a key name, a dotted suffix (``message.id``) or
signature-qualified (``system/init.model``); an entry equal to a frame signature
(``system/status``, ``command_lifecycle``) drops those frames from the turns. ``strict``
also compares the opaque keys' content and model names; masking stays (ids and clocks
never agree across runs).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs
import orjson

from analysis.diffside import SNAPSHOT, Frame, Side, Task, load_side
from compat.capture import Capture
from compat.text import escape, escape_json

DEFAULT_OPAQUE = frozenset(
    {
        "tools",
        "slash_commands",
        "mcp_servers",
        "skills",
        "plugins",
        "agents",
        "capabilities",
        "commands",
        "models",
        "account",
        "available_output_styles",
        "usage",
        "modelUsage",
    }
)
ABSENT = "(absent)"


def _names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@attrs.frozen
class DiffOptions:
    ignore: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    keep_model: bool = False
    strict: bool = False
    opaque: frozenset[str] = attrs.field(default=DEFAULT_OPAQUE, converter=frozenset)


@attrs.frozen
class Difference:
    path: str  # "turn 2 / task local_workflow \"x\" / task_notification.status"
    a: Any  # A's (masked) value; None when kind is only-b
    b: Any
    kind: str  # "changed" | "only-a" | "only-b"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Aligned:
    """One thing the diff compared, for a report that shows the frames (``analysis.report_html``):
    a frame pair of a turn (or a frame present on one side), or a part of a task pair (its
    lifecycle: no frames; a picked frame pair). ``base`` is the path after the turn label up
    to the frame's keys; ``diffs`` index ``DiffResult.differences`` found there."""

    turn: int
    section: str  # "turn 2" / "after turn 3", or the task's name
    label: str  # "assistant #2", "task_started", "lifecycle"
    base: str
    a: Frame | None
    b: Frame | None
    diffs: tuple[int, ...] = ()


@attrs.frozen
class Alignment:
    units: list[Aligned]
    tasks: list[tuple[str, Task | None, Task | None]]  # (name, A's, B's) as paired


@attrs.frozen
class DiffResult:
    differences: list[Difference]
    summary: dict[str, Any] = attrs.Factory(dict)
    alignment: Alignment | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def equivalent(self) -> bool:
        return not self.differences


# -- comparison --------------------------------------------------------------------------


def _jtype(v: Any) -> str:
    if v is None or isinstance(v, bool):
        return "null" if v is None else "boolean"
    return {int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(v), type(v).__name__
    )


def _join(path: str, key: str) -> str:
    return path + key if not path or path.endswith("/ ") else f"{path}.{key}"


def _matches(keys: frozenset[str], sig: str, rel: str) -> bool:
    for cand in (rel, f"{sig}.{rel}"):
        for k in keys:
            if cand == k or cand.endswith(("." + k, "/" + k)):
                return True
    return False


class _Differ:
    def __init__(self, opts: DiffOptions) -> None:
        self.ignore = opts.ignore
        self.opaque = frozenset() if opts.strict else opts.opaque
        self.out: list[tuple[tuple[int, int, int], Difference]] = []
        self.turn_labels: dict[int, str] = {}
        self.group = 0  # turn frames first, then tasks, each in their order
        self.units: list[Aligned] = []  # diffs: indices into out, until diff() sorts it

    def unit(
        self,
        start: int,
        turn: int,
        section: str,
        label: str,
        base: str,
        fa: Frame | None,
        fb: Frame | None,
    ) -> None:
        """Record what was just compared (the differences ``out[start:]``)."""
        u = Aligned(turn, section, label, base, fa, fb, tuple(range(start, len(self.out))))
        self.units.append(u)

    def add(self, turn: int, path: str, a: Any, b: Any, kind: str) -> None:
        label = self.turn_labels.get(turn, f"turn {turn}")
        d = Difference(f"{label} / {path}", a, b, kind)
        self.out.append(((turn, self.group, len(self.out)), d))

    def values(self, turn: int, path: str, sig: str, rel: str, a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            self._dicts(turn, path, sig, rel, a, b)
        elif isinstance(a, list) and isinstance(b, list):
            self._lists(turn, path, sig, rel, a, b)
        elif _jtype(a) != _jtype(b) or a != b:
            self.add(turn, path, a, b, "changed")

    def _dicts(
        self, turn: int, path: str, sig: str, rel: str, a: dict[str, Any], b: dict[str, Any]
    ) -> None:
        for k in [*a, *(k for k in b if k not in a)]:
            r = f"{rel}.{k}" if rel else k
            if _matches(self.ignore, sig, r):
                continue
            p = _join(path, k)
            if k not in b:
                self.add(turn, p, a[k], None, "only-a")
            elif k not in a:
                self.add(turn, p, None, b[k], "only-b")
            elif _matches(self.opaque, sig, r):
                if _jtype(a[k]) != _jtype(b[k]):
                    self.add(turn, p, f"<{_jtype(a[k])}>", f"<{_jtype(b[k])}>", "changed")
            else:
                self.values(turn, p, sig, r, a[k], b[k])

    def _lists(self, turn: int, path: str, sig: str, rel: str, a: list[Any], b: list[Any]) -> None:
        for i in range(max(len(a), len(b))):
            p = f"{path}[{i}]"
            if i >= len(b):
                self.add(turn, p, a[i], None, "only-a")
            elif i >= len(a):
                self.add(turn, p, None, b[i], "only-b")
            else:
                self.values(turn, p, sig, rel, a[i], b[i])

    def frame(
        self, turn: int, label: str, fa: Frame | None, fb: Frame | None, sub: str = ""
    ) -> None:
        start = len(self.out)
        self._frame(turn, label, fa, fb, sub)
        section = self.turn_labels.get(turn, f"turn {turn}")
        self.unit(start, turn, section, label, label + sub, fa, fb)

    def _frame(self, turn: int, label: str, fa: Frame | None, fb: Frame | None, sub: str) -> None:
        if fa is not None and fb is not None:
            self.values(turn, label + sub, fa.sig, "", fa.obj, fb.obj)
        elif fa is not None:
            self.add(turn, label, fa.obj, None, "only-a")
        elif fb is not None:
            self.add(turn, label, None, fb.obj, "only-b")

    def turn(self, k: int, ta: list[Frame], tb: list[Frame]) -> None:
        ta = [f for f in ta if f.sig not in self.ignore]
        tb = [f for f in tb if f.sig not in self.ignore]
        sa, sb = [f.sig for f in ta], [f.sig for f in tb]
        ca, cb = Counter(sa), Counter(sb)
        seen: dict[tuple[str, str], int] = Counter()

        def label(f: Frame, side: str) -> str:
            seen[side, f.sig] += 1
            many = max(ca[f.sig], cb[f.sig]) > 1
            return f"{f.sig} #{seen[side, f.sig]}" if many else f.sig

        sm = difflib.SequenceMatcher(None, sa, sb, autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                for fa, fb in zip(ta[i1:i2], tb[j1:j2], strict=True):
                    seen["b", fb.sig] += 1
                    self.frame(k, label(fa, "a"), fa, fb, " / ")
                continue
            for fa in ta[i1:i2]:
                self.frame(k, label(fa, "a"), fa, None)
            for fb in tb[j1:j2]:
                self.frame(k, label(fb, "b"), None, fb)

    def task(self, name: str, a: Task | None, b: Task | None) -> None:
        self.group = 1
        if a is None or b is None:
            self._lone_task(name, a, b)
            return
        sa, sb = _shape(a, self.ignore), _shape(b, self.ignore)
        start = len(self.out)
        if sa != sb:
            self.add(
                a.start_turn(), f"{name} / lifecycle", " → ".join(sa), " → ".join(sb), "changed"
            )
        self.unit(start, a.start_turn(), name, "lifecycle", f"{name} / lifecycle", None, None)
        picks = [("task_started", 0), ("task_updated", -1), ("task_notification", -1)]
        for sub, at in picks:
            fa, fb = _pick(a, sub, at), _pick(b, sub, at)
            if fa is None or fb is None:
                continue  # the lifecycle shape said so
            start = len(self.out)
            if fa.turn != fb.turn:
                self.add(fa.turn, f"{name} / {sub} (turn)", fa.turn, fb.turn, "changed")
            self.values(fa.turn, f"{name} / {sub}", fa.sig, "", fa.obj, fb.obj)
            self.unit(start, fa.turn, name, sub, f"{name} / {sub}", fa, fb)
        self._final_progress(name, a, b)
        snaps_a, snaps_b = a.frames(SNAPSHOT[7:]), b.frames(SNAPSHOT[7:])
        for i, (fa, fb) in enumerate(zip(snaps_a, snaps_b, strict=False), 1):
            start, sub = len(self.out), f"background_tasks_changed #{i}"
            self.values(fa.turn, f"{name} / {sub}", fa.sig, "", fa.obj, fb.obj)
            self.unit(start, fa.turn, name, sub, f"{name} / {sub}", fa, fb)

    def _lone_task(self, name: str, a: Task | None, b: Task | None) -> None:
        """A task only one side ran: its lifecycle's shape."""
        t = a or b
        assert t is not None
        kind = "only-a" if a is not None else "only-b"
        shape = " → ".join(_shape(t, self.ignore))
        start = len(self.out)
        self.add(t.start_turn(), name, shape if a else None, shape if b else None, kind)
        self.unit(start, t.start_turn(), name, "lifecycle", name, None, None)

    def _final_progress(self, name: str, a: Task, b: Task) -> None:
        """The last task_progress of each side, its workflow agents matched by name."""
        pa, pb = _pick(a, "task_progress", -1), _pick(b, "task_progress", -1)
        if pa is None or pb is None:
            return
        path = f"{name} / task_progress (final)"
        oa, ob = dict(pa.obj), dict(pb.obj)
        wa, wb = oa.pop("workflow_progress", None), ob.pop("workflow_progress", None)
        start = len(self.out)
        self.values(pa.turn, path, pa.sig, "", oa, ob)
        self.progress(pa.turn, path, pa.sig, wa, wb)
        self.unit(start, pa.turn, name, "task_progress (final)", path, pa, pb)

    def progress(self, turn: int, path: str, sig: str, wa: Any, wb: Any) -> None:
        if not isinstance(wa, list) or not isinstance(wb, list):
            self.values(
                turn,
                path,
                sig,
                "",
                {"workflow_progress": wa} if wa is not None else {},
                {"workflow_progress": wb} if wb is not None else {},
            )
            return
        ea, eb = _entries(wa), _entries(wb)
        for key in [*ea, *(k for k in eb if k not in ea)]:
            p = f"{path} / workflow_progress {key}"
            if key not in eb:
                self.add(turn, p, ea[key], None, "only-a")
            elif key not in ea:
                self.add(turn, p, None, eb[key], "only-b")
            else:
                self.values(turn, p, sig, "workflow_progress", ea[key], eb[key])


def _pick(t: Task, subtype: str, at: int) -> Frame | None:
    frames = t.frames(subtype)
    if subtype == "task_updated":
        terminal = [f for f in frames if _status(f) not in ("pending", "running", None)]
        frames = terminal or frames
    return frames[at] if frames else None


def _status(f: Frame) -> Any:
    patch = f.obj.get("patch")
    return patch.get("status") if isinstance(patch, dict) else f.obj.get("status")


def _shape(t: Task, ignore: frozenset[str]) -> list[str]:
    out: list[str] = []
    for e in t.events:
        st = e.sig.removeprefix("system/")
        word = {
            "task_started": "started",
            "task_progress": "progress",
            "background_tasks_changed": "snapshot",
        }.get(st)
        if word is None:
            hidden = _matches(ignore, e.sig, "status") or _matches(ignore, e.sig, "patch.status")
            word = st.removeprefix("task_") + ("" if hidden else f"({_status(e)})")
        if not (word == "progress" and out and out[-1] == "progress"):
            out.append(word)
    return out


def _entries(entries: list[Any]) -> dict[str, Any]:
    """Workflow progress entries keyed for matching: phases by index, agents by phase and
    label (index when unlabelled): agent indexing is CLI-specific, labels are the script's."""
    out: dict[str, Any] = {}
    for e in entries:
        if not isinstance(e, dict):
            key = f"entry {orjson.dumps(e).decode()}"
        elif e.get("type") == "workflow_phase":
            key = f"phase {e.get('index')}"
        elif e.get("type") == "workflow_agent":
            who = e.get("label") if isinstance(e.get("label"), str) else f"#{e.get('index')}"
            key = f"agent {orjson.dumps(who).decode()} (phase {e.get('phaseIndex')})"
        else:
            key = f"{e.get('type')} {e.get('index')}"
        n, base = 1, key
        while key in out:
            n += 1
            key = f"{base} #{n}"
        out[key] = e
    return out


def _match_tasks(ta: list[Task], tb: list[Task]) -> list[tuple[Task | None, Task | None]]:
    pairs: list[tuple[Task | None, Task | None]] = []
    free = list(tb)
    for same in (
        lambda x, y: (x.type, x.name) == (y.type, y.name),
        lambda x, y: x.type == y.type,
        lambda x, y: x.start_turn() == y.start_turn(),
    ):
        for a in ta:
            if any(p[0] is a for p in pairs):
                continue
            b = next((b for b in free if same(a, b)), None)
            if b is not None:
                free.remove(b)
                pairs.append((a, b))
    pairs += [(a, None) for a in ta if not any(p[0] is a for p in pairs)]
    pairs.sort(key=lambda p: p[0].order if p[0] else 0)
    return pairs + [(None, b) for b in free]


_TASK_ID = re.compile(r"<task#\d+>")


def _rename_tasks(side: Side, pairs: list[tuple[Task | None, Task | None]], n: int) -> None:
    """Give B's tasks the placeholder of the A task they matched (numbering follows first
    appearance, and two tasks may start in the other order); unmatched B tasks get numbers
    past A's. Tool-call ids keep their own numbering: they are the correlation evidence."""
    ren = {b.id: a.id if a else f"<task#{n + i}>" for i, (a, b) in enumerate(pairs, 1) if b}
    if all(k == v for k, v in ren.items()):
        return

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            return _TASK_ID.sub(lambda m: ren.get(m.group(), m.group()), v)
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return [sub(x) for x in v] if isinstance(v, list) else v

    def frames(fs: list[Frame]) -> list[Frame]:
        return [Frame(f.sig, f.turn, sub(f.obj)) for f in fs]

    side.turns = [frames(t) for t in side.turns]
    for t in side.tasks:
        t.id, t.events = ren.get(t.id, t.id), frames(t.events)


def diff(a: Capture, b: Capture, options: DiffOptions | None = None) -> DiffResult:
    """Compare what the clients of ``a`` and ``b`` saw (see the module docstring)."""
    opts = options or DiffOptions()
    keep = opts.keep_model or opts.strict
    sa, sb = load_side(a, keep), load_side(b, keep)
    pairs = _match_tasks(sa.tasks, sb.tasks)
    _rename_tasks(sb, pairs, len(sa.tasks) + len(sb.tasks))
    d = _Differ(opts)
    _turns(d, sa, sb)
    tasks = _task_names(pairs)
    for name, ta, tb in tasks:
        d.task(name, ta, tb)
    order = sorted(range(len(d.out)), key=lambda i: d.out[i][0])
    diffs = [d.out[i][1] for i in order]
    at = {old: new for new, old in enumerate(order)}
    units = [attrs.evolve(u, diffs=tuple(sorted(at[i] for i in u.diffs))) for u in d.units]
    summary = {
        "frames": [sa.frames, sb.frames],
        "turns": [sa.results, sb.results],
        "tasks": [len(sa.tasks), len(sb.tasks)],
        "kinds": dict(sorted(Counter(x.kind for x in diffs).items())),
    }
    return DiffResult(diffs, summary, Alignment(units, tasks))


def _turns(d: _Differ, sa: Side, sb: Side) -> None:
    """Compare the sides turn by turn (frames after the last result: "after turn N")."""
    n_results = max(sa.results, sb.results)
    for k in range(1, max(len(sa.turns), len(sb.turns)) + 1):
        d.turn_labels[k] = f"turn {k}" if k <= n_results or k == 1 else f"after turn {k - 1}"
        d.turn(
            k,
            sa.turns[k - 1] if k <= len(sa.turns) else [],
            sb.turns[k - 1] if k <= len(sb.turns) else [],
        )


def _task_names(
    pairs: list[tuple[Task | None, Task | None]],
) -> list[tuple[str, Task | None, Task | None]]:
    """Each matched pair of tasks with its name (``task TYPE "NAME"``, ``#N`` when taken)."""
    names: Counter[str] = Counter()
    tasks: list[tuple[str, Task | None, Task | None]] = []
    for ta, tb in pairs:
        t = ta or tb
        assert t is not None
        name = f"task {t.type} {orjson.dumps(t.name).decode()}"
        names[name] += 1
        tasks.append((name if names[name] == 1 else f"{name} #{names[name]}", ta, tb))
    return tasks


# -- output ------------------------------------------------------------------------------


def render_value(v: Any, other: Any = None, width: int = 100) -> str:
    """A value of a difference on one line: compact JSON, cut at ``width`` characters (a
    string where it parts from ``other``)."""
    s = orjson.dumps(v).decode()
    if len(s) <= width:
        return s
    start = 0
    if isinstance(v, str) and isinstance(other, str):  # show where the strings part
        o = orjson.dumps(other).decode()
        start = next((i for i, (x, y) in enumerate(zip(s, o, strict=False)) if x != y), 0)
        start = max(0, start - 20)
    cut = s[start : start + width]
    return ("…" if start else "") + cut + f"…(+{len(s) - start - len(cut)} chars)"


def format_text(
    result: DiffResult, *, color: bool = False, names: tuple[str, str] = ("A", "B")
) -> str:
    """One line per difference, ``path: A <value>, B <value>``, never wrapped; every string
    from the streams is escaped, and never read as markup; colour only when asked
    (``bridge.render``)."""
    from rich.text import Text

    from bridge.render import render

    a, b, bold = "red", "green", "bold"
    lines = [Text.styled(f"--- A: {escape(names[0])}", a)]
    lines.append(Text.styled(f"+++ B: {escape(names[1])}", b))
    for d in result.differences:
        ra = ABSENT if d.kind == "only-b" else escape(render_value(d.a, d.b))
        rb = ABSENT if d.kind == "only-a" else escape(render_value(d.b, d.a))
        lines.append(
            Text.assemble((escape(d.path), bold), ": ", ("A " + ra, a), ", ", ("B " + rb, b))
        )
    s = result.summary
    stats = f"frames {s.get('frames')}, turns {s.get('turns')}, tasks {s.get('tasks')}" if s else ""
    if result.equivalent:
        lines.append(Text.styled(f"equivalent ({stats})", b))
    else:
        kinds = ", ".join(f"{k}: {n}" for k, n in s.get("kinds", {}).items())
        lines.append(
            Text.styled(f"{len(result.differences)} difference(s) ({kinds}; {stats})", bold)
        )
    return render(Text("\n").join(lines), width=80, colour=color, wrap=False) + "\n"


def to_json(result: DiffResult, names: tuple[str, str] = ("A", "B")) -> str:
    """``{"equivalent", "a", "b", "summary", "differences": [{path, a, b, kind}]}``."""
    doc = {
        "equivalent": result.equivalent,
        "a": names[0],
        "b": names[1],
        "summary": result.summary,
        "differences": [d.to_dict() for d in result.differences],
    }
    return escape_json(orjson.dumps(doc).decode())
