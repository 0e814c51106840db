"""mkdocs hook for the workbench's site (``hooks:`` in mkdocs.yml).

1. ``jaxwb`` is a namespace whose four packages live in the repository's top-level folders (setup.py's
   ``package_dir``); an editable install reaches them through an import hook that griffe (mkdocstrings' static
   loader) cannot follow. Before the build, a temporary folder ``<tmp>/jaxwb/`` of symlinks to ``theory/``,
   ``models/``, ``pallas_kernels/`` and ``sims/`` is made and handed to the Python handler as its search path.
2. The committed figures (``figures/**/*.png``, outside ``docs/``) are added to the site under ``figures/``, so
   a page links them as ``../figures/<result>/<name>.png`` and a missing figure fails the strict build.
3. Sphinx roles in docstrings (``:func:`name```) render as plain code: the role's prefix is dropped.
4. ``known-disagreements/audit.md`` gets the mutation-audit table rendered from the committed records
   (``figures/audit/*.json``) by the code that writes the audit (``jaxwb.sims.core.audit.format_audit_table``),
   so the page can never disagree with the records.
5. ``measurements.md`` gets the full presets' run-time table rendered from the committed manifests
   (``figures/<result>/manifest.json``) by ``jaxwb.sims.core.profiling.run_times_table``.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"theory": "theory", "models": "models", "pallas_kernels": "pallas_kernels", "sims": "sims"}
AUDIT_MARKER = "<!-- audit-table -->"
RUN_TIMES_MARKER = "<!-- run-times -->"
_SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|const):(?=<code>)")
_tmp: list[Path] = []


@event_priority(100)  # before mkdocstrings builds its handlers
def on_config(config, **_):
    tmp = Path(tempfile.mkdtemp(prefix="jaxwb-docs-"))
    _tmp.append(tmp)
    (tmp / "jaxwb").mkdir()
    for name, folder in PACKAGES.items():
        (tmp / "jaxwb" / name).symlink_to(ROOT / folder, target_is_directory=True)
    python = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    python["paths"] = [str(tmp)]
    return config


def on_files(files, config, **_):
    for png in sorted((ROOT / "figures").rglob("*.png")):
        files.append(
            File(
                png.relative_to(ROOT).as_posix(),
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def audit_table() -> str:
    from jaxwb.sims.core.audit import format_audit_table

    records = [json.loads(f.read_text()) for f in sorted((ROOT / "figures" / "audit").glob("*.json"))]
    if not records:
        return "*No audit records in `figures/audit/` yet: run `workbench audit`.*"
    return format_audit_table(records)


def run_times() -> str:
    from jaxwb.sims.core.profiling import run_times_table

    manifests = [json.loads(f.read_text()) for f in sorted((ROOT / "figures").glob("*/manifest.json"))]
    return run_times_table([m for m in manifests if m.get("preset") == "full"])


def on_page_markdown(markdown, page, **_):
    if AUDIT_MARKER in markdown:
        markdown = markdown.replace(AUDIT_MARKER, audit_table())
    if RUN_TIMES_MARKER in markdown:
        markdown = markdown.replace(RUN_TIMES_MARKER, run_times())
    return markdown


def on_page_content(html, page, **_):
    return _SPHINX_ROLE.sub("", html)


def on_shutdown(**_):
    while _tmp:
        shutil.rmtree(_tmp.pop(), ignore_errors=True)
