"""Mechanical mutants: ``workbench audit NAME --random N`` draws N mutants from the source of the theory, model and
kernel functions that the result's quick run executes, and reports how many its claims catch.

A hand-written mutant (``MUTANTS``) is a bug its author imagined; a drawn one is not chosen by anybody, so the share
caught measures the claims against bugs nobody anticipated. The operators are those of the mutation-testing tools
for Python (mutmut, cosmic-ray, mutatest): an arithmetic operator swapped (``+``/``-``, ``*``/``/``, ``**``/``*``),
a comparison swapped (``<``/``<=``, ``>``/``>=``, ``==``/``!=``), ``and``/``or`` swapped, a nonzero float
constant scaled by 1.1 or an integer constant moved by one, a term of a sum dropped (``a + b`` -> ``a``), two
positional arguments of a call swapped, and a unary minus dropped.

Which functions: :func:`executed_functions` runs the quick preset and its claims under ``sys.monitoring`` and keeps the
module-level functions and class methods of ``jaxwb.theory``, ``jaxwb.models`` and ``jaxwb.pallas_kernels`` whose
code started (JAX traces Python once per compilation, so a jitted function counts). Input validation
(``theory.validate``, ``theory.checking``, ``pallas_kernels.dispatch``) is left out: it computes nothing a claim
measures. A drawn mutant is applied like a hand-written one (``audit.applied``: the function is recompiled from its
mutated source in its module's namespace and patched wherever it is referenced); a mutant whose results are
bitwise identical to the clean run's, claims included, is *equivalent* and excluded from the count (what differs
between two clean runs, wall-clock timings, is left out of that comparison).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import inspect
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from types import CodeType, FunctionType, ModuleType
from typing import Any

import numpy as np

from jaxwb.sims.core.claims import evaluate
from jaxwb.sims.core.outputs import run_result

MUTATED_PACKAGES = ("jaxwb.theory", "jaxwb.models", "jaxwb.pallas_kernels")
SKIPPED_MODULES = ("jaxwb.theory.validate", "jaxwb.theory.checking", "jaxwb.pallas_kernels.dispatch")
OPERATORS = ("arith", "compare", "boolop", "constant", "drop_term", "swap_args", "unary")

_ARITH = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


@dataclasses.dataclass(frozen=True)
class Site:
    """One place a mutation operator applies: the ``index``-th applicable node (in ``ast.walk`` order) of
    operator ``op`` in the function ``qualname`` of ``module``."""

    module: str
    qualname: str
    op: str
    index: int
    line: int
    detail: str

    @property
    def target(self) -> str:
        return f"{self.module}:{self.qualname}"

    @property
    def name(self) -> str:
        return f"{self.module.removeprefix('jaxwb.')}:{self.qualname}:{self.line}:{self.op}:{self.detail}"


def _candidates(tree: ast.AST, op: str) -> Iterator[tuple[ast.expr | ast.stmt, str]]:
    """Nodes of ``tree`` that operator ``op`` can change, with a short description of the change."""
    for node in ast.walk(tree):
        if op == "arith" and isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            yield node, f"{type(node.op).__name__}->{_ARITH[type(node.op)].__name__}"
        elif op == "compare" and isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARE:
            yield node, f"{type(node.ops[0]).__name__}->{_COMPARE[type(node.ops[0])].__name__}"
        elif op == "boolop" and isinstance(node, ast.BoolOp):
            yield node, f"{type(node.op).__name__}->{'Or' if isinstance(node.op, ast.And) else 'And'}"
        elif (
            op == "constant"
            and isinstance(node, ast.Constant)
            and type(node.value) in (int, float)
            and not (isinstance(node.value, float) and node.value == 0.0)
        ):
            yield node, f"{node.value!r}->" + ("x1.1" if isinstance(node.value, float) else "+1")
        elif op == "drop_term" and isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            yield node, "drop the right term"
        elif (
            op == "swap_args"
            and isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args[:2])
        ):
            yield node, "swap the first two arguments"
        elif op == "unary" and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            yield node, "drop the unary minus"


class _Apply(ast.NodeTransformer):
    def __init__(self, target: Any, op: str):  # an ast node whose fields depend on op
        self.target, self.op = target, op

    def visit(self, node: Any) -> Any:  # the target's fields depend on its operator (checked by _candidates)
        if node is not self.target:
            return self.generic_visit(node)
        op = self.op
        if op == "arith":
            node.op = _ARITH[type(node.op)]()
        elif op == "compare":
            node.ops = [_COMPARE[type(node.ops[0])](), *node.ops[1:]]
        elif op == "boolop":
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        elif op == "constant":
            node.value = node.value * 1.1 if isinstance(node.value, float) else node.value + 1
        elif op == "drop_term":
            return node.left
        elif op == "swap_args":
            node.args = [node.args[1], node.args[0], *node.args[2:]]
        elif op == "unary":
            return node.operand
        return node


def _function_tree(fn: FunctionType) -> ast.Module:
    return ast.parse(textwrap.dedent(inspect.getsource(fn)))


def mutable(fn: Any) -> FunctionType | None:
    """The plain Python function behind ``fn`` (a jit wrapper's ``__wrapped__``), or None when its source cannot
    be recompiled on its own: a closure, a ``super()`` call, a custom derivative rule, a lambda."""
    raw = inspect.unwrap(fn) if callable(fn) else None
    if not isinstance(raw, FunctionType) or raw.__name__ == "<lambda>" or raw.__closure__:
        return None
    try:
        source = inspect.getsource(raw)
    except (OSError, TypeError):
        return None
    if "super()" in source or "custom_vjp" in source or "custom_jvp" in source or ".defvjp" in source:
        return None
    return raw


def _is_validation(func: ast.AST, namespace: dict) -> bool:
    """A call of a function of the validation modules (``v.check(...)`` with ``v`` bound to one of them)."""
    while isinstance(func, ast.Attribute):
        func = func.value
    if not isinstance(func, ast.Name):
        return False
    target = namespace.get(func.id)
    name = getattr(target, "__name__", "") if isinstance(target, ModuleType) else getattr(target, "__module__", "")
    return bool(name) and name.startswith(SKIPPED_MODULES)


def sites_of(module: str, qualname: str, fn: FunctionType) -> list[Site]:
    """Every mutation site of ``fn`` (decorators and the docstring excluded)."""
    tree = _function_tree(fn)
    body = tree.body[0]
    if not isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    doc = body.body[0] if body.body and isinstance(body.body[0], ast.Expr) else None
    skip = {id(n) for d in body.decorator_list for n in ast.walk(d)} | {id(n) for n in ast.walk(body.args)}
    # input validation calls (``v.positive("lam", lam)``): swapping their arguments or editing their messages only
    # makes every run raise, a "catch" that says nothing about the claims
    for node in ast.walk(body):
        if isinstance(node, ast.Call) and _is_validation(node.func, fn.__globals__):
            skip |= {id(n) for n in ast.walk(node)}
    if doc is not None and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
        skip |= {id(n) for n in ast.walk(doc)}
    sites = []
    for op in OPERATORS:
        for i, (node, detail) in enumerate(_candidates(tree, op)):
            if id(node) not in skip:
                sites.append(Site(module, qualname, op, i, fn.__code__.co_firstlineno + node.lineno - 1, detail))
    return sites


def mutated_function(site: Site, original: Any) -> Any:
    """``original`` recompiled from its source with ``site``'s change, decorators re-applied, in a copy of its
    module's namespace."""
    raw = mutable(original)
    if raw is None:
        raise ValueError(f"{site.target} cannot be recompiled from its source")
    tree = _function_tree(raw)
    node = next(n for i, (n, _) in enumerate(_candidates(tree, site.op)) if i == site.index)
    tree = ast.fix_missing_locations(_Apply(node, site.op).visit(tree))
    namespace = dict(vars(importlib.import_module(raw.__module__)))
    exec(compile(tree, f"<mutant {site.name}>", "exec"), namespace)
    return namespace[tree.body[0].name]


def _members(module: ModuleType) -> Iterator[tuple[str, Any]]:
    for name, value in vars(module).items():
        if inspect.isclass(value) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                if callable(fn):
                    yield f"{name}.{attr}", member
        elif callable(value) and getattr(inspect.unwrap(value), "__module__", None) == module.__name__:
            yield name, value


#: a mutant's run may take MUTANT_CPU_FACTOR times the clean run's CPU time (at least MIN_MUTANT_CPU_S) before it
#: is stopped and counted as caught by a timeout (as mutation-testing tools do)
MUTANT_CPU_FACTOR = 10
MIN_MUTANT_CPU_S = 60.0


class MutantTimeout(Exception):
    """A mutant's run used more CPU time than :data:`MUTANT_CPU_FACTOR` times the clean run's."""


@contextlib.contextmanager
def cpu_time_limit(seconds: float, expired: list[bool]) -> Iterator[None]:
    """Raise :class:`MutantTimeout` in the block once the process has used ``seconds`` of CPU time (all threads;
    ``ITIMER_PROF``, so a loaded machine does not shorten the limit); appends True to ``expired`` when it fires.
    Only in the main thread on POSIX; elsewhere no limit."""
    import signal
    import threading

    if not hasattr(signal, "ITIMER_PROF") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        expired.append(True)
        raise MutantTimeout(f"over {seconds:.0f} CPU-s")

    previous = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@contextlib.contextmanager
def code_started(codes: Sequence[CodeType] | None = None) -> Iterator[set[CodeType]]:
    """The set of code objects whose execution started inside the ``with`` block (``sys.monitoring`` PY_START
    events): every code object, or only those in ``codes`` (local events: nothing else is slowed down)."""
    mon = sys.monitoring
    tool = next(i for i in range(1, 6) if mon.get_tool(i) is None)
    started: set[CodeType] = set()
    mon.use_tool_id(tool, "workbench-audit")
    try:
        mon.register_callback(tool, mon.events.PY_START, lambda code, offset: started.add(code))
        if codes is None:
            mon.set_events(tool, mon.events.PY_START)
        else:
            for code in codes:
                mon.set_local_events(tool, code, mon.events.PY_START)
        yield started
    finally:
        mon.set_events(tool, 0)
        for code in codes or ():
            mon.set_local_events(tool, code, 0)
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)


def executed_functions(run: Callable[[], Any]) -> list[tuple[str, str, FunctionType]]:
    """``(module, qualname, function)`` of every project function under :data:`MUTATED_PACKAGES` whose code
    started while ``run()`` ran (``sys.monitoring`` PY_START events), that :func:`mutable` can recompile."""
    with code_started() as started:
        run()
    found = []
    for mod_name, module in sorted(sys.modules.items()):
        if module is None or not mod_name.startswith(MUTATED_PACKAGES) or mod_name.startswith(SKIPPED_MODULES):
            continue
        for qualname, value in _members(module):
            raw = mutable(value.__func__ if isinstance(value, (staticmethod, classmethod)) else value)
            if raw is not None and raw.__code__ in started and raw.__module__ == mod_name:
                found.append((mod_name, qualname, raw))
    return found


def differing_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> set[str]:
    """Keys of two flattened results whose arrays differ in any bit (dtype, shape or bytes), or exist in one only."""
    return set(a.keys() ^ b.keys()) | {
        k
        for k in a.keys() & b.keys()
        if not (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes())
    }


def results_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray], volatile: AbstractSet[str] = frozenset()) -> bool:
    """Bitwise equality of two flattened results, arrays in ``volatile`` (wall-clock timings) aside."""
    return not (differing_arrays(a, b) - set(volatile))


def claims_key(claims, volatile: AbstractSet[str] = frozenset()) -> list[tuple]:
    """Each claim's statement, prediction, measurement, interval and tolerance (the statement alone for a claim
    in ``volatile``: one that differs between two clean runs, a timing)."""
    return [
        (c.statement,) if c.statement in volatile else (c.statement, c.predicted, c.measured, c.ci, c.tolerance)
        for c in claims
    ]


def claims_equal(a, b, volatile: AbstractSet[str] = frozenset()) -> bool:
    """The same claims with bitwise the same predictions, measurements and intervals (``volatile`` ones aside)."""
    return claims_key(a, volatile) == claims_key(b, volatile)


def sites_of_functions(functions: Sequence[tuple[str, str, FunctionType]]) -> list[Site]:
    """Every mutation site of ``functions`` (``executed_functions``'s list), in its order: what a draw draws from."""
    return [s for mod, qual, fn in functions for s in sites_of(mod, qual, fn)]


def same_site(record: dict[str, Any], site: Site) -> bool:
    """Whether a mutant record of an audit json names ``site`` (its name carries the operator and detail; records
    written before ``index`` was kept match on the name alone)."""
    return record["mutant"] == site.name and record.get("index", site.index) == site.index


def draw_sites(every: Sequence[Site], n: int, seed: int) -> list[Site]:
    """The random audit's draw: ``min(n, len(every))`` of ``every`` uniformly without replacement, in the order
    ``np.random.default_rng(seed).choice`` gives them."""
    if not every:
        return []
    rng = np.random.default_rng(seed)
    return [every[i] for i in rng.choice(len(every), size=min(n, len(every)), replace=False)]


VERDICTS = ("caught", "missed", "equivalent", "not_applied")


def random_audit_problem(summary: Any) -> str | None:
    """Why ``summary`` (a parsed ``figures/audit/random/<name>.json``) is not a random audit this module wrote, or
    None. Checked: an object with a ``result`` name, an integer ``seed`` >= 0, optional integer ``n``/``sites`` >= 0,
    an optional boolean ``complete`` and a ``mutants`` list whose records have a string ``mutant``, a ``verdict`` of
    :data:`VERDICTS` and an optional integer ``index``; the counts the README reads (``sites``, ``functions``,
    ``caught``, ``non_equivalent``, ``equivalent``; absent from a refused audit) are integers >= 0."""

    def count(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if not isinstance(summary, dict):
        return f"it holds a JSON {type(summary).__name__}, not an audit object"
    if not isinstance(summary.get("result"), str):
        return "'result' is not a result name"
    if not count(summary.get("seed")):
        return f"'seed' must be an integer >= 0, got {summary.get('seed')!r}"
    required = () if summary.get("refused") else ("sites", "functions", "caught", "non_equivalent", "equivalent")
    for field in ("n", "sites", "functions", "caught", "non_equivalent", "equivalent", "caught_by_error"):
        if field in required and field not in summary:
            return f"{field!r} is missing"
        if field in summary and not count(summary[field]):
            return f"{field!r} must be an integer >= 0, got {summary[field]!r}"
    if "complete" in summary and not isinstance(summary["complete"], bool):
        return f"'complete' must be true or false, got {summary['complete']!r}"
    mutants = summary.get("mutants")
    if not isinstance(mutants, list):
        return "'mutants' is not a list"
    for i, m in enumerate(mutants):
        if not isinstance(m, dict) or not isinstance(m.get("mutant"), str):
            return f"mutants[{i}] is not a mutant record (an object with a 'mutant' name)"
        if m.get("verdict") not in VERDICTS:
            return f"mutants[{i}] has verdict {m.get('verdict')!r}, not one of {', '.join(VERDICTS)}"
        if "index" in m and not count(m["index"]):
            return f"mutants[{i}] has index {m['index']!r}, not an integer >= 0"
    return None


def load_random_audit(path: str | Any) -> dict[str, Any]:
    """The random audit in ``path``, checked by :func:`random_audit_problem`; ``OutputError`` naming the file and
    what is wrong when it cannot be read, is not JSON or does not have the audit's schema (a damaged file)."""
    from jaxwb.sims.core.errors import OutputError
    from jaxwb.sims.core.outputs import read_json

    summary = read_json(path)
    problem = random_audit_problem(summary)
    if problem is not None:
        raise OutputError(f"{path}: {problem}: the file is damaged")
    return summary


def stale_mutants(
    module: ModuleType, committed: dict[str, Any], on_claims: Callable[[list], None] | None = None
) -> list[str]:
    """Whether a committed random audit (``figures/audit/random/<name>.json``) still describes the code: one clean
    run of its preset finds the executed functions, and the draw its seed and size give now is compared with its
    mutants, site by site (name, operator, node index, detail). Returns one line per difference (``[]``: the
    committed verdicts are about this code's mutants). A change to any drawn function's source lines, or to the
    set of executed functions, shows here; then the audit is to be run again. ``on_claims`` receives the clean
    run's claims (the seed sweep's check reuses that run)."""
    import jax

    from jaxwb.sims.core.presets import get_config

    recorded = committed.get("mutants", [])
    if committed.get("refused") or not recorded:
        return []
    cfg = get_config(module, committed.get("preset", "quick"))
    key = jax.random.key(committed.get("seed", 0))

    def clean_run():
        claims = evaluate(module, run_result(module, cfg, key=key), cfg)
        if on_claims is not None:
            on_claims(claims)

    every = sites_of_functions(executed_functions(clean_run))
    stale = []
    if len(every) != committed.get("sites", len(every)):
        stale.append(f"sites: {committed['sites']} committed, {len(every)} now")
    drawn = draw_sites(every, committed.get("n", len(recorded)), committed.get("seed", 0))
    if len(drawn) != len(recorded):
        stale.append(f"mutants: {len(recorded)} committed, {len(drawn)} drawn now")
    for i, (site, m) in enumerate(zip(drawn, recorded, strict=False)):  # a length change is reported above
        if not same_site(m, site):
            stale.append(f"#{i}: {m['mutant']} committed, {site.name} drawn now")
    return stale


def random_audit(
    module: ModuleType,
    n: int,
    *,
    seed: int = 0,
    preset: str = "quick",
    verbose: bool = True,
    only: set[str] | None = None,
    resume: list[dict[str, Any]] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Draw ``n`` mutation sites (without replacement, uniformly over every site of every executed function) and
    judge each: ``caught`` when a claim that passes in the clean run fails (or the run raises), ``equivalent``
    when the results are bitwise identical to the clean run's (excluded), else missed. A JSON-able summary.

    ``only`` (mutant names, or ``name#index`` where a name covers several sites of one line) judges those sites
    instead of a draw, e.g. the missed ones of a committed audit: a quick way to re-judge survivors after a claim
    changed. Names whose site no longer exists (the source moved) are listed under ``"not_found"``. Such a
    partial summary is for iterating, not for the committed audit.

    ``on_progress`` receives the summary after each judged mutant (``"complete": False`` until the last), so an
    interrupted audit leaves what it judged; ``resume`` (the ``mutants`` of such a partial summary, same seed and
    source) reuses the records whose site is the same as the draw's at that position instead of running them
    again."""
    import jax

    from jaxwb.sims.core.outputs import flatten_results
    from jaxwb.sims.core.presets import get_config

    cfg = get_config(module, preset)
    key = jax.random.key(seed)
    holder: dict[str, Any] = {}

    def clean_run():  # the run and its claims: a theory function may feed only the predictions
        holder["results"] = run_result(module, cfg, key=key)
        holder["claims"] = evaluate(module, holder["results"], cfg)

    t0 = time.perf_counter()
    functions = executed_functions(clean_run)
    clean_flat = flatten_results(holder["results"])
    clean_claims = holder["claims"]
    c0 = time.process_time()
    clean_run()  # a second clean run: what differs between the two (wall-clock timings) never decides equivalence
    cpu_limit = max(MIN_MUTANT_CPU_S, MUTANT_CPU_FACTOR * (time.process_time() - c0))
    volatile = differing_arrays(clean_flat, flatten_results(holder["results"]))
    volatile_claims = {
        a.statement for a, b in zip(clean_claims, holder["claims"], strict=True) if claims_key([a]) != claims_key([b])
    }
    unexpected = [c.statement for c in clean_claims if not c.as_expected]
    if unexpected:  # as the hand-written audit: a clean run that already fails cannot judge a mutant
        return {
            "result": module.NAME,
            "preset": preset,
            "seed": seed,
            "refused": unexpected,
            "caught": 0,
            "non_equivalent": 0,
            "equivalent": 0,
            "sites": 0,
            "functions": len(functions),
            "mutants": [],
        }
    every = sites_of_functions(functions)
    drawn = draw_sites(every, n, seed)
    not_found: list[str] = []
    if only is not None:
        drawn = [s for s in every if s.name in only or f"{s.name}#{s.index}" in only]
        not_found = sorted(set(only) - {s.name for s in drawn} - {f"{s.name}#{s.index}" for s in drawn})
    summary: dict[str, Any] = {
        "result": module.NAME,
        "preset": preset,
        "seed": seed,
        "functions": len(functions),
        "sites": len(every),
        "volatile": sorted(volatile) + sorted(volatile_claims),
        "clean_wall_s": round(time.perf_counter() - t0, 2),
        "mutants": [],
    }
    if only is not None:
        summary["only"], summary["not_found"] = sorted(only), not_found
    summary["n"], summary["complete"] = len(drawn), False
    reusable = list(resume or [])
    for i, site in enumerate(drawn):
        if i < len(reusable) and same_site(reusable[i], site):
            summary["mutants"].append(reusable[i])
            _tally(summary)
            if verbose:
                print(f"  {module.NAME:<18} {reusable[i]['verdict']:<10} {site.name} (resumed)", flush=True)
            continue
        t1 = time.perf_counter()
        record = judge_site(module, cfg, key, site, clean_flat, clean_claims, volatile, volatile_claims, cpu_limit)
        record["wall_s"] = round(time.perf_counter() - t1, 2)
        summary["mutants"].append(record)
        if verbose:
            print(f"  {module.NAME:<18} {record['verdict']:<10} {site.name}", flush=True)
        _tally(summary)
        if on_progress is not None:
            on_progress(summary)
    summary["complete"] = True
    return _tally(summary)


def judge_site(
    module: ModuleType,
    cfg: Any,
    key: Any,
    site: Site,
    clean_flat: dict[str, np.ndarray],
    clean_claims: list,
    volatile: set[str],
    volatile_claims: set[str],
    cpu_limit: float,
) -> dict[str, Any]:
    """Run ``module`` under the mutant of ``site`` and judge it against the clean run (see :func:`random_audit`):
    a record with its verdict (caught / missed / equivalent / not_applied) and the claims it made fail."""

    from jaxwb.sims.core.audit import Mutant, applied, newly_failed
    from jaxwb.sims.core.outputs import flatten_results

    made: list[FunctionType] = []

    def make(original, s=site, made=made):
        made.append(mutated_function(s, original))
        return made[-1]

    mutant = Mutant(site.name, site.target, make, site.detail)
    record: dict[str, Any] = {
        "mutant": site.name,
        "op": site.op,
        "index": site.index,
        "line": site.line,
        "detail": site.detail,
    }
    expired: list[bool] = []
    try:
        with (
            cpu_time_limit(cpu_limit, expired),
            applied(mutant),
            code_started([inspect.unwrap(f).__code__ for f in made[:1]]) as started,
        ):
            results = run_result(module, cfg, key=key)
            claims = evaluate(module, results, cfg)
        same = results_equal(flatten_results(results), clean_flat, volatile)
        if same and claims_equal(claims, clean_claims, volatile_claims):
            # the patched attribute was never called (the run reaches the function through another reference,
            # e.g. a dict built at import): the mutant was not applied, which says nothing about equivalence
            record["verdict"] = "equivalent" if started else "not_applied"
        else:
            failed = newly_failed(claims, clean_claims)
            record["failed_claims"] = failed
            record["verdict"] = "caught" if failed else "missed"
    except Exception as err:
        record["verdict"] = "caught"
        record["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
        if expired:  # the run would have gone on far longer than a clean one: a user notices that too
            record["error"] = f"timeout: over {cpu_limit:.0f} CPU-s ({MUTANT_CPU_FACTOR}x the clean run's)"
    return record


def _tally(summary: dict[str, Any]) -> dict[str, Any]:
    """Fill in the counts (caught, non-equivalent, equivalent, not applied, caught by raising) and the Wilson
    interval of ``summary["mutants"]``, in place; returns ``summary``."""
    from scipy import stats

    mutants = summary["mutants"]
    caught = sum(m["verdict"] == "caught" for m in mutants)
    summary["caught_by_error"] = sum(m["verdict"] == "caught" and "error" in m for m in mutants)
    non_equivalent = sum(m["verdict"] not in ("equivalent", "not_applied") for m in mutants)
    summary["caught"], summary["non_equivalent"] = caught, non_equivalent
    summary["equivalent"] = sum(m["verdict"] == "equivalent" for m in mutants)
    summary["not_applied"] = sum(m["verdict"] == "not_applied" for m in mutants)
    summary.pop("wilson_95", None)
    if non_equivalent:
        ci = stats.binomtest(caught, non_equivalent).proportion_ci(confidence_level=0.95, method="wilson")
        summary["wilson_95"] = [round(float(ci.low), 4), round(float(ci.high), 4)]
    return summary


def format_random_audit(summary: dict[str, Any]) -> str:
    """One line: caught / non-equivalent with its Wilson interval, and the missed mutants."""
    if summary.get("refused"):
        return (
            f"{summary['result']}: not judged: the clean {summary['preset']} run fails "
            f"{len(summary['refused'])} claim(s) not expected to fail"
        )
    lo, hi = summary.get("wilson_95", [float("nan"), float("nan")])
    head = (
        f"{summary['result']}: {summary['caught']}/{summary['non_equivalent']} non-equivalent mutants caught "
        f"(95% Wilson {100 * lo:.0f}-{100 * hi:.0f}%; {summary.get('caught_by_error', 0)} of them by the run "
        f"raising), {summary['equivalent']} equivalent"
        + (f", {summary['not_applied']} not applied (unreachable by patching)" if summary.get("not_applied") else "")
        + ", drawn from "
        f"{summary['sites']} sites in {summary['functions']} functions"
    )
    missed = [m["mutant"] for m in summary["mutants"] if m["verdict"] == "missed"]
    return head + "".join(f"\n  missed: {m}" for m in missed)
