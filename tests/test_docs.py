"""The documentation: the site builds with warnings as errors, the examples run, the README stays the front door.

* ``mkdocs build --strict`` into a temporary folder (skipped, with the reason, when the docs toolchain of the
  ``dev`` extra is not installed): API pages from the docstrings, one page per result, no broken link, the
  mathematics (``$...$``) marked up for MathJax.
* ``docs/examples/*.md`` run as doctests; every line of code in the README's python blocks is a line of them.
* The README keeps what code rewrites (the results table between its marker and the end of the table, one row
  per result) and what CI relies on (``python -m pytest``, the command ``.ci/run`` runs).
* Every result has its page ``docs/papers/<name>.md`` in the site's navigation and on the index page.
* LICENSE is the Apache-2.0 text that pyproject declares; CITATION.cff carries the required fields.
* Docs, docstrings and comments speak of the project as it is: no issue numbers, work history or notes outside
  the repository (history goes to ``docs/changelog.md``).
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("*.md"))
_FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _python_blocks(path: Path) -> list[str]:
    return _FENCE.findall(path.read_text())


def _result_names() -> list[str]:
    from jaxwb.sims.core import registry

    return sorted(registry.result_names())


def _docs_toolchain_missing() -> str | None:
    """Why the site cannot be built here (the docs toolchain of the ``dev`` extra is missing), or None."""
    missing = []
    for module in ("mkdocs", "material", "pymdownx", "mkdocstrings", "mkdocstrings_handlers.python"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(module)
    if missing:
        return f"docs toolchain not installed ({', '.join(missing)}): pip install -e '.[dev]'"
    return None


# --- the site ---------------------------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path):
    reason = _docs_toolchain_missing()
    if reason:
        pytest.skip(reason)
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    t0 = time.perf_counter()
    # no -q: mkdocs' quiet mode drops the warnings that --strict counts
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    index = (site / "index.html").read_text()
    for name in _result_names():
        assert (site / "papers" / name / "index.html").exists(), f"no page for result {name}"
        assert f'href="papers/{name}/"' in index, f"the index page does not link result {name}"
    for page in (
        "getting-started",
        "kernels",
        "measurements",
        "architecture",
        "changelog",
        "known-disagreements",
        "api/quant",
        "api/attention",
        "api/theory",
        "api/sims-core",
    ):
        assert (site / page / "index.html").exists(), page
    api = (site / "api" / "quant" / "index.html").read_text()
    assert 'id="jaxwb.pallas_kernels.quant.quantize_model"' in api
    assert (site / "figures" / "kernels_gpu" / "kernels_gpu.png").exists()
    # the mathematics: pymdownx.arithmatex marks it up for MathJax, which the pages load
    page = (site / "papers" / "river_valley" / "index.html").read_text()
    assert '<span class="arithmatex">' in page and "javascripts/mathjax.js" in page
    assert (site / "javascripts" / "mathjax.js").exists()
    print(f"mkdocs build --strict: {wall:.1f} s")


# --- the examples -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_doctest(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(path)
    assert blocks and all(">>>" in b for b in blocks), f"{path.name}: python blocks must be doctests"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict = {"__name__": f"docs.examples.{path.stem}"}
    report: list[str] = []
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"{path.name}[{i}]", str(path), 0)
        runner.run(test, out=report.append, clear_globs=False)
        globs.update(test.globs)  # a page is one session: later blocks see earlier names
    results = runner.summarize(verbose=False)
    assert results.attempted > 0
    assert results.failed == 0, "".join(report)


def _code_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^(>>>|\.\.\.) ?", "", line.strip()) if line.strip().startswith((">>>", "...")) else line
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def test_readme_code_is_the_tested_code():
    """Every code line of the README's python blocks appears in a doctest of docs/examples (outputs aside)."""
    tested = set()
    for path in EXAMPLES:
        for block in _python_blocks(path):
            tested.update(
                _code_lines("\n".join(ln for ln in block.splitlines() if ln.lstrip().startswith((">>>", "..."))))
            )
    blocks = _python_blocks(README)
    assert len(blocks) >= 2, "the README shows the examples in python blocks"
    for block in blocks:
        for line in _code_lines(block):
            assert line in tested, f"README line not covered by a doctest in docs/examples/: {line!r}"


# --- the README -------------------------------------------------------------------------------------------------


def test_readme_front_door():
    text = README.read_text()
    assert len(text.split()) <= 1600, f"README has {len(text.split())} words; long prose belongs in docs/"
    long = [i + 1 for i, ln in enumerate(text.splitlines()) if len(ln) > 200 and not ln.startswith("|")]
    assert not long, f"README lines over 200 characters: {long}"
    assert "```bash\npython -m pytest\n```" in text and "workbench all" in text
    assert "python -m pytest" in (ROOT / ".ci" / "run").read_text()
    assert "`slow`" in text and "`mutation`" in text


def test_readme_results_table_is_generated(tmp_path):
    """The block the generator rewrites (``workbench claims --readme``) has one row per result, and rewriting a
    copy from the committed claims changes nothing but claims cells."""
    from jaxwb.sims.core import readme

    text = README.read_text()
    lines = text.split("\n")
    assert readme.MARKER in lines
    i = lines.index(readme.MARKER) + 1
    rows = []
    while i < len(lines) and lines[i].startswith("|"):
        rows.append(lines[i])
        i += 1
    names = [m.group("name") for r in rows if (m := readme._ROW.match(r))]
    assert sorted(names) == _result_names()
    copy = tmp_path / "README.md"
    shutil.copy(README, copy)
    assert sorted(readme.update_results_table(copy)) == _result_names()
    before = [r.rsplit(" | ", 1)[0] for r in rows]
    after_lines = copy.read_text().split("\n")
    j = after_lines.index(readme.MARKER) + 1
    assert [r.rsplit(" | ", 1)[0] for r in after_lines[j : j + len(rows)]] == before


# --- pages, license, citation -----------------------------------------------------------------------------------


def test_every_result_has_a_page_in_the_site():
    yaml = pytest.importorskip("yaml")
    nav = str(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    index = (DOCS / "index.md").read_text()
    for name in _result_names():
        page = DOCS / "papers" / f"{name}.md"
        assert page.exists(), f"no docs/papers/{name}.md"
        assert f"papers/{name}.md" in nav, f"docs/papers/{name}.md is not in mkdocs.yml's nav"
        assert f"(papers/{name}.md)" in index, f"docs/index.md does not link docs/papers/{name}.md"


_CLAIM_COUNT = re.compile(r"(\d+) claims \((\d+) check, (\d+) bound, (\d+) paper\)")


def test_result_pages_count_the_committed_claims():
    """A page's "N claims (a check, b bound, c paper)" is its committed ``claims.json``'s count, kind by kind."""
    from jaxwb.sims.core.claims import kind_counts
    from jaxwb.sims.core.outputs import load_claims

    for name in _result_names():
        page = (DOCS / "papers" / f"{name}.md").read_text()
        claims = load_claims(name)
        counts = kind_counts(claims)
        committed = (len(claims), counts["check"], counts["bound"], counts["paper"])
        for m in _CLAIM_COUNT.finditer(page):
            stated = tuple(int(g) for g in m.groups())
            assert stated == committed, f"docs/papers/{name}.md: {m.group(0)!r}, claims.json has {committed}"


def test_license_and_citation():
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"] == "JAX theory-and-simulation workbench"
    assert str(cff["version"]) == "0.1.0" and cff["license"] == "Apache-2.0"
    assert cff["message"] and cff["authors"]
    for ref in cff["references"]:
        assert ref["type"] and ref["title"] and ref["authors"], ref


def test_readme_input_policy_holds():
    """What the README's "Bad input, transformations and numeric edges" section promises, call by call."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import pytest

    from jaxwb import theory
    from jaxwb.theory import river_valley as rv

    text = README.read_text()
    assert "## Bad input, transformations and numeric edges" in text
    assert "jax.grad(rv.gd_threshold)(-1.)" in text
    with pytest.raises(ValueError, match="lam must be > 0"):
        rv.gd_threshold(-1.0)
    with pytest.raises(ValueError, match="lam must be > 0"):
        jax.grad(rv.gd_threshold)(-1.0)
    with pytest.raises(ValueError, match="lam"):
        jax.vmap(rv.gd_threshold)(jnp.array([1.0, -1.0]))
    assert np.isfinite(float(jax.jit(rv.gd_threshold)(-1.0)))  # plain jit: no value check (documented)
    with pytest.raises(ValueError, match="lam must be > 0"):
        theory.checked(rv.gd_threshold)(-1.0)
    with pytest.raises((ValueError, TypeError), match="lam"):
        rv.gd_threshold(1.0 + 1.0j)
    with pytest.raises(ValueError, match="lam"):
        rv.gd_threshold(1e-45)
    assert float(rv.spectral_radius(1e30, 1.0, 0.5)) == pytest.approx(1e30, rel=1e-6)  # scaled, not inf


# --- the project, not the work ----------------------------------------------------------------------------------

# Issue numbers, work history and notes outside the repository: history goes to docs/changelog.md only.
WORK_WORDS = re.compile(r"issue[- ][0-9]+|issue #|#[0-9]{2}\b|\bdeliver [0-9]|this session|shared/papers", re.I)


def _project_text_files() -> list[Path]:
    """The docs (but the changelog), the README, the notebooks, the code's and the tests' docstrings and comments,
    and the results' presets (their comments say why each value)."""
    files = [p for p in DOCS.rglob("*") if p.suffix in (".md", ".py") and p != DOCS / "changelog.md"]
    files += [README, *(ROOT / "notebooks").glob("*.py"), *(ROOT / "sims").glob("*/presets.toml")]
    for tree in ("sims", "theory", "models", "pallas_kernels", "benchmarks", "tests"):
        files += (ROOT / tree).rglob("*.py")
    here = Path(__file__).resolve()  # this test states the words it looks for
    return sorted(p for p in files if p.is_file() and "__pycache__" not in p.parts and p.resolve() != here)


def test_docs_speak_of_the_project():
    """Docs, docstrings and comments describe the project as it is: no issue numbers ("issue 38", "#38"), no work
    history ("Deliver 2", "this session") and no files outside the repository (``shared/papers/``)."""
    hits = []
    for path in _project_text_files():
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if WORK_WORDS.search(line):
                hits.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not hits, "words about the work, not the project:\n" + "\n".join(hits)


# a placeholder for text never written: "SWEEP_LINES", "QUICK_COST", "TODO" outside code spans
PLACEHOLDER = re.compile(r"\b(?:TODO|TBD|FIXME|[A-Z][A-Z0-9_]*_(?:TEXT|TABLE|LINES?|COST|NUMBERS?|HERE))\b")


def test_docs_hold_no_placeholder():
    """No page holds a placeholder token outside code spans: every section of the site is written."""
    hits = [
        f"{p.relative_to(ROOT).as_posix()}:{n}: {line.strip()[:100]}"
        for p in [*DOCS.rglob("*.md"), README]
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if PLACEHOLDER.search(re.sub(r"`[^`]*`", "", line))
    ]
    assert not hits, "placeholders in the docs:\n" + "\n".join(hits)
