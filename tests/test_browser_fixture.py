"""Under CI a browser test that would skip fails instead (issue 22: a fresh machine's
``make test`` skipped 23 browser tests, chromedriver missing, and passed).

Each case runs pytest for real, in a subprocess, on a small test module using the
project's browser fixtures, with no Chromium or chromedriver on ``PATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MODULE = """
import pytest

@pytest.mark.browser
def test_a_page(browser):
    pass

@pytest.mark.browser
def test_needs_a_tool():
    pytest.skip("npm cannot reach its registry")

def test_no_browser():
    pytest.skip("not a browser test")
"""


def run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_module.py").write_text(MODULE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(tmp_path)  # no chromium, no chromedriver
    env["PYTHONPATH"] = str(ROOT)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.fixtures.browser", "-p", "no:cacheprovider",
         "-rA", "-o", "markers=browser", str(tmp_path / "test_module.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_browser_test_that_would_skip_fails(tmp_path: Path, ci: str) -> None:
    done = run(tmp_path, ci)
    assert done.returncode == 1, done.stdout
    # Chromium missing fails the setup (an error), the skip in the body a failure; a test
    # without the browser still skips.
    assert "1 failed, 1 skipped, 1 error" in done.stdout, done.stdout
    assert (
        "a browser test may not skip under CI (CI=true): chromium and chromedriver not installed"
        in done.stdout
    ), done.stdout
    assert "a browser test may not skip under CI (CI=true): npm cannot reach" in done.stdout


def test_elsewhere_it_skips_saying_why(tmp_path: Path) -> None:
    done = run(tmp_path, None)
    assert done.returncode == 0, done.stdout
    assert "3 skipped" in done.stdout, done.stdout
    assert "chromium and chromedriver not installed" in done.stdout
