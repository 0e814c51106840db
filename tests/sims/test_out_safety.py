"""No command deletes what it did not write, and every failure of the CLI is one line and an exit status.

An existing ``--out`` folder is replaced only when it is empty or a previous output of the workbench holding
nothing else; anything else is refused with exit 2 before the simulation starts, byte-identical. Damaged committed
outputs make ``workbench claims`` exit 1 naming the file; OS errors while writing are one line naming the path,
the previous output intact and no temporary folder left; SIGTERM is handled like SIGINT (exit 143).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

from jaxwb.sims.core import cli, harness, outputs, paths
from jaxwb.sims.core.errors import OutputError, WorkbenchError
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT
from tests.sims.fake_result import fake_cli, fake_module


def _tree(folder):
    """Every path under ``folder`` with its mode and (for files) bytes: what must stay byte-identical."""
    snap = {".": stat.S_IMODE(os.lstat(folder).st_mode)}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, folder)
            st = os.lstat(p)
            snap[rel] = (stat.S_IMODE(st.st_mode), open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None)
    return snap


def _user_folder(path):
    path.mkdir()
    (path / "thesis.tex").write_text("\\documentclass{article}\n")
    (path / "sub").mkdir()
    (path / "sub" / "data.csv").write_text("1,2\n")
    path.chmod(0o751)
    return path


def _git_repo(path):
    path.mkdir()
    (path / "README.md").write_text("mine\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def no_run(monkeypatch):
    """Fail the test if any simulation starts: refusals must come first."""

    def boom(*args, **kwargs):
        raise AssertionError("the simulation started although --out was refused")

    monkeypatch.setattr(harness, "execute", boom)


@pytest.mark.parametrize("make", [_user_folder, _git_repo], ids=["user_files", "git_repository"])
@pytest.mark.parametrize("command", ["run", "all"])
def test_a_folder_the_workbench_did_not_write_is_refused_untouched(tmp_path, capsys, no_run, make, command):
    if command == "run":
        folder = make(tmp_path / "mine")
        argv = ["run", "river_valley", "--quick", "--out", str(folder)]
    else:
        (tmp_path / "parent").mkdir()
        folder = make(tmp_path / "parent" / "river_valley")
        argv = ["all", "--quick", "--out", str(tmp_path / "parent")]
    before = _tree(folder)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(folder) in err and "will not be replaced" in err, err
    assert _tree(folder) == before
    assert sorted(os.listdir(folder.parent)) == [folder.name], "a temporary folder was left beside it"


def test_current_directory_repository_and_its_parent_are_refused(tmp_path, monkeypatch, capsys, no_run):
    cwd = _user_folder(tmp_path / "cwd")
    monkeypatch.chdir(cwd)
    before = _tree(cwd)
    for out in (".", "", str(cwd)):
        assert cli.main(["run", "river_valley", "--quick", "--out", out]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert _tree(cwd) == before
    listing = sorted(os.listdir(REPO_ROOT))
    assert cli.main(["run", "river_valley", "--quick", "--out", str(REPO_ROOT)]) == 2
    err = capsys.readouterr().err
    assert "will not be replaced: it is the workbench's repository" in err, err
    # the parent holds the repository (and, when the tests run under /tmp, the current directory too)
    assert cli.main(["run", "river_valley", "--quick", "--out", str(REPO_ROOT.parent)]) == 2
    err = capsys.readouterr().err
    assert "will not be replaced: it holds" in err, err
    assert sorted(os.listdir(REPO_ROOT)) == listing


def test_an_output_with_a_foreign_file_is_refused_and_a_previous_output_keeps_its_mode(tmp_path):
    mod = fake_module()
    out = tmp_path / "result"
    out.mkdir(mode=0o750)
    out.chmod(0o750)
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)  # an empty folder is replaced
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    harness.execute(mod, out_dir=out, cfg=mod.Config(2.0), verbose=False)  # so is a previous output
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    assert json.loads((out / "manifest.json").read_text())["config"]["value"] == 2.0
    (out / "notes.txt").write_text("mine")
    before = _tree(out)
    with pytest.raises(WorkbenchError, match="notes.txt"):
        harness.execute(mod, out_dir=out, cfg=mod.Config(3.0), verbose=False)
    assert _tree(out) == before
    fresh = tmp_path / "new" / "deeper"
    harness.execute(mod, out_dir=fresh, cfg=mod.Config(1.0), verbose=False)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o777 & ~_umask()


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.ENAMETOOLONG, errno.EBUSY, errno.EACCES])
def test_an_os_error_while_writing_is_one_line_and_keeps_the_previous_output(tmp_path, monkeypatch, code):
    mod = fake_module()
    out = tmp_path / "result"
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)
    before = _tree(out)

    def failing_savez(path, **arrays):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(np, "savez_compressed", failing_savez)
    with pytest.raises(OutputError, match=os.strerror(code)) as info:
        harness.execute(mod, out_dir=out, cfg=mod.Config(2.0), verbose=False)
    assert str(out) in str(info.value) and info.value.exit_status == 1
    assert _tree(out) == before
    assert sorted(os.listdir(tmp_path)) == ["result"], "the temporary folder was left behind"


def test_a_file_size_limit_during_the_write_is_one_line_exit_1(tmp_path):
    out = tmp_path / "result"
    mod = fake_module()
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)
    before = _tree(out)

    def limit():  # a real EFBIG: the first PNG is larger than this
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    # no compilation cache: under the limit JAX would leave truncated entries in the suite's shared one
    rc, _, err = fake_cli(["run", "atomic_fake", "--out", str(out)], {"WORKBENCH_JAX_CACHE": "0"}, preexec_fn=limit)
    assert rc == 1, err
    assert err.strip().count("\n") == 0 and "File too large" in err and str(out) in err, err
    assert _tree(out) == before
    assert sorted(os.listdir(tmp_path)) == ["result"]


def test_sigterm_is_handled_like_sigint(tmp_path):
    out = tmp_path / "result"
    mod = fake_module()
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)
    before = _tree(out)
    marker = tmp_path / "writing"
    rc, _, err = fake_cli(
        ["run", "atomic_fake", "--out", str(out)], {"WRITING_MARKER": str(marker)}, marker, signal.SIGTERM
    )
    assert rc == 143, err
    assert err.strip().count("\n") == 0 and "terminated" in err, err
    assert _tree(out) == before
    assert sorted(os.listdir(tmp_path)) == ["result", "writing"], "temporary folder left after SIGTERM"


DAMAGE = {
    "truncated claims.json": ("claims.json", lambda p: p.write_text(p.read_text()[:100]), "not valid JSON"),
    "claims.json not a list": ("claims.json", lambda p: p.write_text('{"claims": 3}'), "not a list of claims"),
    "claims.json a folder": ("claims.json", lambda p: (p.unlink(), p.mkdir()), "is a folder"),
    "claims.json binary": ("claims.json", lambda p: p.write_bytes(b"\xff\xfe\x00\x81" * 40), "not text"),
    "a claim missing fields": ("claims.json", lambda p: p.write_text('[{"statement": "x"}]'), "not a valid claim"),
    "manifest hashes a string": (
        "manifest.json",
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "content_sha256": "abc"})),
        "no content hashes",
    ),
    "manifest truncated": ("manifest.json", lambda p: p.write_text(p.read_text()[:50]), "not valid JSON"),
    "data.npz changed": ("data.npz", lambda p: p.write_bytes(p.read_bytes() + b"0"), "does not match"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_claims_on_damaged_committed_outputs_exit_1_naming_the_file(tmp_path, monkeypatch, capsys, case):
    fname, damage, what = DAMAGE[case]
    shutil.copytree(FIGURES_DIR / "river_valley", tmp_path / "river_valley")
    monkeypatch.setattr(outputs, "FIGURES_DIR", tmp_path)
    monkeypatch.setattr(paths, "FIGURES_DIR", tmp_path)
    assert cli.main(["claims", "river_valley"]) == 0
    capsys.readouterr()
    damage(tmp_path / "river_valley" / fname)
    assert cli.main(["claims", "river_valley"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and what in err and fname in err, err
    assert all(line.startswith("workbench: error: ") for line in err.strip().splitlines()), err


def _committed_copy(tmp_path, name="river_valley"):
    """A copy of a committed full-preset output: a previous output of the workbench, untouched."""
    out = tmp_path / name
    shutil.copytree(FIGURES_DIR / name, out)
    return out


def _forged(folder, result="no_such_result"):
    """The user's own files beside a manifest that lists them, with hashes that match nothing."""
    folder.mkdir()
    (folder / "photo.png").write_bytes(b"\x89PNG my holiday")
    (folder / "data.npz").write_bytes(b"my data")
    (folder / "claims.json").write_text("[]\n")
    manifest = {
        "result": result,
        "figures": ["photo.png"],
        "content_sha256": {f: "0" * 64 for f in ("photo.png", "data.npz", "claims.json")},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _edit(name, change):
    def make(tmp_path):
        out = _committed_copy(tmp_path)
        change(out / name)
        return out

    return make


OWNERSHIP = {
    # case: (make the folder, fragment of the one-line refusal)
    "forged manifest of an unknown result": (lambda t: _forged(t / "mine"), "'no_such_result', which is not a result"),
    "forged manifest of a real result, wrong hashes": (
        lambda t: _forged(t / "mine", "river_valley"),
        "claims.json differs from the SHA-256 in its manifest",
    ),
    "an edited figure": (
        _edit("phase_diagram.png", lambda p: p.write_bytes(p.read_bytes() + b"edited")),
        "phase_diagram.png differs from the SHA-256",
    ),
    "edited claims": (_edit("claims.json", lambda p: p.write_text("[]\n")), "claims.json differs"),
    "a file the manifest does not list": (
        _edit("notes.txt", lambda p: p.write_text("mine")),
        "it holds notes.txt, which its manifest does not list",
    ),
    "a figure replaced by a link": (
        _edit("phase_diagram.png", lambda p: (p.unlink(), p.symlink_to("/etc/hostname"))),
        "phase_diagram.png is not a plain file",
    ),
    "a subfolder under a listed name": (
        _edit("data.npz", lambda p: (p.unlink(), p.mkdir())),
        "data.npz is not a plain file",
    ),
    "manifest without hashes": (
        _edit("manifest.json", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "content_sha256": {}}))),
        "does not list exactly data.npz, claims.json and its figures",
    ),
    "manifest hash not hex": (
        _edit(
            "manifest.json",
            lambda p: p.write_text(
                json.dumps(
                    {
                        **json.loads(p.read_text()),
                        "content_sha256": {
                            **json.loads(p.read_text())["content_sha256"],
                            "data.npz": "not a digest",
                        },
                    }
                )
            ),
        ),
        "its hash for data.npz is not a SHA-256 digest",
    ),
    "manifest a list": (_edit("manifest.json", lambda p: p.write_text("[1, 2]")), "holds a JSON list, not an object"),
    "manifest not JSON": (_edit("manifest.json", lambda p: p.write_text("{")), "not readable JSON"),
    "manifest a folder": (_edit("manifest.json", lambda p: (p.unlink(), p.mkdir())), "manifest.json is not a file"),
    "no manifest": (_edit("manifest.json", lambda p: p.unlink()), "holds no workbench manifest.json"),
}


@pytest.mark.parametrize("case", sorted(OWNERSHIP))
@pytest.mark.parametrize("command", ["run", "all"])
def test_out_is_replaced_only_when_every_file_matches_a_registered_manifest(tmp_path, capsys, no_run, case, command):
    make, fragment = OWNERSHIP[case]
    folder = make(tmp_path)
    if command == "all":  # `all --out P` writes P/<name> for each result: the same check per result folder
        parent = tmp_path / "parent"
        parent.mkdir()
        folder = folder.rename(parent / "river_valley")
        argv = ["all", "--quick", "--out", str(parent)]
    else:
        argv = ["run", "river_valley", "--quick", "--out", str(folder)]
    before = _tree(folder)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "will not be replaced" in err and fragment in err, err
    assert _tree(folder) == before


def test_an_untouched_previous_output_is_accepted_and_its_manifest_checked_at_publish(tmp_path):
    out = _committed_copy(tmp_path)
    assert paths.replaceable_problem(out) is None
    assert paths.check_out_dir(out, "river_valley") == out
    # a folder that becomes foreign during the run is refused again when the output is published
    (out / "phase_diagram.png").write_bytes(b"edited during the run")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "x").write_text("new")
    with pytest.raises(WorkbenchError, match="phase_diagram.png differs"):
        outputs.publish_dir(tmp, out, "river_valley")
    assert (out / "phase_diagram.png").read_bytes() == b"edited during the run"


@pytest.mark.parametrize("kind", ["loop", "loop_parent", "dangling"])
def test_out_at_a_bad_symbolic_link_is_refused_before_the_run(tmp_path, capsys, no_run, kind):
    a, b = tmp_path / "a", tmp_path / "b"
    if kind == "dangling":
        a.symlink_to(tmp_path / "missing")
    else:
        a.symlink_to(b)
        b.symlink_to(a)
    out = a / "sub" if kind == "loop_parent" else a
    assert cli.main(["run", "river_valley", "--quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    expected = "missing target" if kind == "dangling" else "Too many levels of symbolic links"
    assert err.count("\n") == 1 and expected in err, err
    assert sorted(os.listdir(tmp_path)) == ["a"] if kind == "dangling" else ["a", "b"]


def test_out_at_a_link_to_a_folder_writes_into_the_folder_and_keeps_the_link(tmp_path):
    mod = fake_module()
    target, link = tmp_path / "target", tmp_path / "link"
    target.mkdir()
    link.symlink_to(target)
    harness.execute(mod, out_dir=link, cfg=mod.Config(1.0), verbose=False)
    assert link.is_symlink() and (target / "manifest.json").is_file()
    harness.execute(mod, out_dir=link, cfg=mod.Config(2.0), verbose=False)  # a previous output: replaced
    assert link.is_symlink() and json.loads((target / "manifest.json").read_text())["config"]["value"] == 2.0


def test_workbench_jax_cache_0_turns_off_a_cache_set_through_the_environment(tmp_path):
    """``WORKBENCH_JAX_CACHE=0`` turns the compilation cache off even where ``$JAX_COMPILATION_CACHE_DIR`` names one
    (the suite shares its cache with subprocesses that way): nothing is written there."""
    folder = tmp_path / "jax_cache"
    script = (
        "import jax, jax.numpy as jnp\n"
        "from jaxwb.sims.core.paths import enable_compilation_cache\n"
        "assert enable_compilation_cache() is None\n"
        "jax.jit(lambda x: jnp.sin(x) * 3.0)(jnp.arange(7.0)).block_until_ready()\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "WORKBENCH_JAX_CACHE": "0", "JAX_COMPILATION_CACHE_DIR": str(folder)}
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert not folder.exists() or not any(folder.iterdir())
