"""`plybot up`: Redis (started here), the API and warm workers; Ctrl-C leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from worker.bench.startup import format_runs, measure_startup
from worker.process.redis_server import free_port

pytestmark = [pytest.mark.slow, pytest.mark.service, pytest.mark.redis]

PLYBOT = str(Path(sys.executable).parent / "plybot")


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc), whatever session it moved to."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_up_runs_the_service_and_ctrl_c_stops_every_process(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PLYBOT_REDIS_DATA_DIR"] = str(tmp_path / "redis")
    up = subprocess.Popen(
        [PLYBOT, "up", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert up.stdout is not None
        end = time.monotonic() + 180
        while time.monotonic() < end:
            line = up.stdout.readline()
            assert line, "plybot up exited early:\n" + "".join(lines)
            lines.append(line)
            if "plybot is up" in line:
                break
        status = httpx.get(f"http://127.0.0.1:{port}/v1/status", timeout=10).json()
        assert status["workers_alive"] == 2
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
        tree = descendants(up.pid)
        assert len(tree) >= 5  # redis-server, the API, the supervisor, two workers
        # One log stream, each line saying which process wrote it.
        prefixes = {line.split("|", 1)[0].strip() for line in lines if "|" in line}
        assert {"redis", "worker", "api", "up"} <= prefixes
        up.send_signal(signal.SIGINT)
        rest = up.communicate(timeout=120)[0]
        assert up.returncode == 0, rest
        assert "up      | stopped" in rest
        time.sleep(0.5)
        assert not [pid for pid in tree if alive(pid)]
        assert (tmp_path / "redis").is_dir()  # Redis kept its data where it was told
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


def _wait_for_line(log: Path, text: str, up: subprocess.Popen, timeout: float = 300) -> None:
    """Until ``text`` appears in ``log`` (``up`` must keep running meanwhile)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in log.read_text(errors="replace"):
            return
        assert up.poll() is None, "plybot up exited:\n" + log.read_text(errors="replace")[-3000:]
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} in the log:\n" + log.read_text(errors="replace")[-3000:])


def test_up_rides_out_its_redis_being_killed(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PLYBOT_REDIS_DATA_DIR"] = str(tmp_path / "redis")
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [PLYBOT, "up", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_line(log, "plybot is up", up)
        redis_pid = next(
            pid
            for pid in descendants(up.pid)
            if b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
        os.kill(redis_pid, signal.SIGKILL)
        _wait_for_line(log, "Redis exited; starting it again", up)
        # The service answers again by itself: an analysis asked now is answered.
        base = f"http://127.0.0.1:{port}"
        body = {"game": "tictactoe", "position": "15", "mode": "solve"}
        answer: dict = {}
        end = time.monotonic() + 120
        while time.monotonic() < end and answer.get("status") != "done":
            try:
                r = httpx.post(f"{base}/v1/analyses?wait=5", json=body, timeout=30)
                answer = r.json() if r.status_code == 200 else {}
            except httpx.HTTPError:
                answer = {}
        assert answer.get("status") == "done", answer
        status = httpx.get(f"{base}/v1/status", timeout=10).json()
        assert status["workers_alive"] == 1
        assert up.poll() is None
        up.send_signal(signal.SIGINT)
        assert up.wait(120) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


def test_startbench_reads_the_order_of_a_fresh_start() -> None:
    # plybot startbench's reading of plybot up's log: the job Redis answers, then each
    # worker serves, then plybot up says it is up; the service is stopped after.
    run = measure_startup(workers=2)
    assert len(run.serving_s) == 2
    assert 0 < run.redis_ready_s <= min(run.serving_s)
    assert max(run.serving_s) <= run.up_s
    assert run.after_redis_s == max(run.serving_s) - run.redis_ready_s
    assert "median" in format_runs([run, run])
