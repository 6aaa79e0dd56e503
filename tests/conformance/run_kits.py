"""`make conformance`: the official A2A conformance kits (a2aproject/a2a-tck) against a fresh
Taskdeck, with one summary per kit and transport. docs/conformance.md says how to get them.

    python tests/conformance/run_kits.py --tck03 DIR --tck10 DIR

  --tck03 DIR  a clone of the 0.3 kit (tag 0.3.0.beta3); --tck10 DIR the 1.0 kit (branch
               1.0-dev). Either may be left out to run only the other.

For each kit: a virtualenv of its own under var/conformance/ (the kit's requirements;
made again only when they change), then a fresh Taskdeck (its own TASKDECK_VAR_DIR in a
temp dir, so a new SQLite database; migrate; `manage.py serve` on free ports), the kit's
tests, and the server stopped whatever happens. Reports (the kits' JSON and JUnit files,
the server's log, summary.json) go to var/conformance/reports/ (--reports), never into a
kit's clone or the repository. Exit status: 0 all passed (skips, xfails and the 1.0
kit's KNOWN_10 failures allowed), 1 some test failed, 2 a kit or the server could not run.

The kits' code is never copied here: they run from their clones, in their own virtualenvs.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "var" / "conformance"
PY = ROOT / ".venv" / "bin" / "python"
MANAGE = ROOT / "manage.py"
DIE_WITH_US = ["setpriv", "--pdeathsig", "TERM"] if shutil.which("setpriv") else []

# The 0.3 kit's categories, as its run_tck.py (0.3.0.beta3, run_test_category) runs them.
# Its pytest is called directly so the reports land where we say (run_tck.py writes them
# to ./reports of the kit's clone).
CATEGORIES_03 = [
    ("mandatory", "tests/mandatory/", "mandatory_jsonrpc or mandatory_protocol"),
    ("capabilities", "tests/optional/capabilities/", None),
    ("transport-equivalence", "tests/optional/multi_transport/", "transport_equivalence"),
    ("quality", "tests/optional/quality/", None),
    ("features", "tests/optional/features/", None),
]
# 0.3 card transport names -> the 0.3 kit's --transports names
TRANSPORTS_03 = {"JSONRPC": "jsonrpc", "GRPC": "grpc", "HTTP+JSON": "rest"}
# Packages the 0.3 kit imports that its requirements.txt omits (its pyproject.toml lists
# them): run_tck.py needs python-dotenv; tests/mandatory/security/* import OpenSSL, and
# without it the whole mandatory category stops at collection.
EXTRA_03 = ["python-dotenv>=1.0.0", "pyOpenSSL>=23.0.0"]
TRANSPORTS_10 = ("jsonrpc", "http_json", "grpc")
# the 1.0 kit's name for the agent card's own checks in its compatibility report -> ours
CARD_10 = {"agent_card": "card"}
# 1.0 kit tests that fail by a decision, each with why: printed as "known" with the reason,
# not counted as failures (the kit's own per-transport counts keep them as failed). One
# that passes again is printed too, so that its entry goes.
KNOWN_10 = {
    "agent_card.test_agent_card.TestAgentCardStructure::test_agent_card_validates_against_schema": (
        "the card both versions read carries the 0.3 fields, which the 1.0 schema refuses "
        "(docs/conformance.md, Known disagreements)"
    ),
}


class KitError(Exception):
    """A kit or the server could not run (not a test failure)."""


# --- output ------------------------------------------------------------------------------


def say(text: str = "") -> None:
    print(text, flush=True)


def elapsed(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


# --- virtualenvs -------------------------------------------------------------------------


def kit_venv(name: str, kit: Path, inputs: list[Path], install: list[str]) -> Path:
    """var/conformance/venv-<name> with the kit's requirements, made again when the files
    they come from (or our install command) change."""
    digest = hashlib.sha1(" ".join(install).encode())
    for path in inputs:
        digest.update(path.read_bytes())
    venv = WORK / f"venv-{name}"
    stamp = venv / f".installed-{digest.hexdigest()[:12]}"
    python = venv / "bin" / "python"
    if stamp.exists() and python.exists():
        return python
    say(f"[{name}] installing the kit's requirements into {venv.relative_to(ROOT)} ...")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for old in venv.glob(".installed-*"):
        old.unlink()
    log = WORK / f"pip-{name}.log"
    with open(log, "w") as out:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *install],
            cwd=kit, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    if done.returncode != 0:
        raise KitError(f"pip install failed for the {name} kit: see {log}")
    stamp.touch()
    return python


# --- the server --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, headers: dict[str, str] | None = None) -> dict:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


class Taskdeck:
    """A fresh Taskdeck: new var dir (SQLite, secrets, wake sockets), migrated, served by
    `manage.py serve` on free ports; stop() ends it and every process it started."""

    def __init__(self, log: Path, web: int, workers: int, extra: list[str]) -> None:
        self.log_path = log
        self.web, self.workers = web, workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.grpc_port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.var = Path(tempfile.mkdtemp(prefix="taskdeck-conformance-"))
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
            and not k.startswith("TASKDECK_")
        }
        env.update(
            DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
            PYTHONUNBUFFERED="1",
            TASKDECK_VAR_DIR=str(self.var),
            TASKDECK_DEBUG="0",
            # the kits send no key; they need to send, read, cancel, push and subscribe
            TASKDECK_ANONYMOUS_SCOPES="read,write,agent",
            # the scripted agent that follows the kits' message ids (a2a/runtime/agents/tck.py):
            # offered only here (and in the test suite), the default skill of the kits' tasks
            TASKDECK_EXTRA_AGENTS="a2a.runtime.agents.tck",
            TASKDECK_DEFAULT_SKILL="tck",
            # the kits' webhook receivers listen on localhost
            TASKDECK_PUSH_ALLOW_PRIVATE="1",
            # The kits reuse a scenario's messageId in later tests with other text (1.0:
            # tck/requirements/base.py; 0.3: test_rapid_sequential_requests sends one id ten
            # times). A2A makes a messageId name one message; Taskdeck by default answers a
            # repeat with the first task and refuses other parts under the same id
            # (docs/protocol.md, "Idempotent sends"). Off for the kits' run only.
            TASKDECK_IDEMPOTENCY_HOURS="0",
        )
        env.update(item.split("=", 1) for item in extra)  # --server-env
        self.env = env

    def start(self) -> None:
        self.log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        migrate = subprocess.run(
            [str(PY), str(MANAGE), "migrate", "--noinput", "-v0"],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        if migrate.returncode != 0:
            raise KitError(f"migrate failed: see {self.log_path}")
        command = [
            str(PY), str(MANAGE), "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--web", str(self.web), "--workers", str(self.workers),
        ]  # fmt: skip
        serve_help = subprocess.run(
            [str(PY), str(MANAGE), "serve", "--help"],
            cwd=ROOT, env=self.env, capture_output=True, text=True,
        ).stdout  # fmt: skip
        if "--grpc-port" in serve_help:
            self.grpc_port = free_port()
            command += ["--grpc-port", str(self.grpc_port)]
        self.proc = subprocess.Popen(
            [*DIE_WITH_US, *command],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                raise KitError(f"the server exited with {code}: see {self.log_path}")
            try:
                get_json(f"{self.url}/.well-known/agent-card.json")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise KitError(f"no agent card after 90 s: see {self.log_path}") from None
                time.sleep(0.3)

    def card(self) -> dict:
        """The card as both kits fetch it: without A2A-Version."""
        return get_json(f"{self.url}/.well-known/agent-card.json")

    def _children(self) -> list[int]:
        """The pids `serve` printed for its web processes, workers and scheduler (each in
        a session of its own, so they are not in our process group)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        found = re.search(r"\(pids ([^)]*)\)", text)
        return [int(p) for p in re.findall(r"=(\d+)", found.group(1))] if found else []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # serve stops its children on SIGTERM
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in self._children():  # what outlived it (serve killed or stuck)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.var, ignore_errors=True)


# --- results -----------------------------------------------------------------------------


class Tally:
    """Outcomes of one run (a kit, category or transport)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.failed: list[tuple[str, str]] = []  # (test id, first line of the failure)
        self.known: list[tuple[str, str]] = []  # (test id, why) of KNOWN_10 failures
        self.passing_known: list[str] = []  # KNOWN_10 tests that passed
        self.skips: collections.Counter[str] = collections.Counter()  # reason -> count
        self.seconds = 0.0

    def add(self, outcome: str, test: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        if outcome in ("failed", "error"):
            self.failed.append((test, detail))
        elif outcome == "known":
            self.known.append((test, detail))
        elif outcome == "skipped":
            self.skips[detail] += 1

    def line(self) -> str:
        c = self.counts
        total = sum(c.values())
        text = (
            f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, "
            f"{c['xfailed']} xfailed"
        )
        if c["xpassed"]:
            text += f", {c['xpassed']} xpassed"
        if c["error"]:
            text += f", {c['error']} errors"
        if c["known"]:
            text += f", {c['known']} known disagreement{'s' if c['known'] > 1 else ''}"
        return f"{text} (of {total})"

    def as_json(self) -> dict:
        return {
            "counts": dict(self.counts),
            "failed": [{"test": t, "detail": d} for t, d in self.failed],
            "known": [{"test": t, "why": d} for t, d in self.known],
            "passing_known": self.passing_known,
            "skipped": dict(self.skips),
            "seconds": round(self.seconds, 1),
        }


def first_line(text: str, limit: int = 160) -> str:
    """The telling line of a pytest failure: its last `E ` line, else its last line."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    line = errors[0] if errors else (lines[-1] if lines else "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def skip_reason(longrepr) -> str:
    """pytest-json-report writes a skip as "('file', line, 'Skipped: reason')"."""
    text = longrepr if isinstance(longrepr, str) else json.dumps(longrepr)
    found = re.search(r"Skipped: (.*?)['\"]\)?$", text)
    return (found.group(1) if found else text)[:200]


def read_json_report(path: Path, tally: Tally) -> None:
    """pytest-json-report's file (the 0.3 kit's reports)."""
    report = json.loads(path.read_text())
    for collector in report.get("collectors", []):
        if collector.get("outcome") == "failed":
            detail = first_line(collector.get("longrepr", ""))
            tally.add("error", collector.get("nodeid", "?"), detail)
    for test in report.get("tests", []):
        outcome = test["outcome"]
        stages = [test.get(s) or {} for s in ("setup", "call", "teardown")]
        if outcome == "skipped":
            reason = next((skip_reason(s["longrepr"]) for s in stages if s.get("longrepr")), "")
            tally.add("skipped", test["nodeid"], reason)
        elif outcome in ("failed", "error"):
            failing = next((s for s in stages if s.get("outcome") == "failed"), {})
            detail = (failing.get("crash") or {}).get("message") or failing.get("longrepr", "")
            tally.add(outcome, test["nodeid"], first_line(detail))
        else:
            tally.add(outcome, test["nodeid"])


def read_compat_10(path: Path) -> dict[str, Tally]:
    """The 1.0 kit's per-transport counts as the kit itself counts them (its compatibility
    report's `per_transport`): one result per requirement checked on a transport, so a
    test that checks every transport counts once on each; `card` for the agent card's own
    checks (the kit's `agent_card`). The failed requirements, with their first error."""
    report = json.loads(path.read_text())
    out: dict[str, Tally] = {}
    for transport, counts in report.get("per_transport", {}).items():
        tally = out.setdefault(CARD_10.get(transport, transport), Tally())
        for outcome in ("passed", "failed", "skipped"):
            tally.counts[outcome] += counts.get(outcome, 0)
    for requirement, result in report.get("per_requirement", {}).items():
        if result.get("status") != "FAIL":
            continue
        # the requirement's transports that failed it (the kit keeps one status per
        # transport, the last test's: when that passed, every transport it was checked on)
        transports = result.get("transports", {})
        failing = [t for t, status in transports.items() if status == "FAIL"] or list(transports)
        detail = first_line((result.get("errors") or [""])[0])
        for transport in failing:
            out.setdefault(CARD_10.get(transport, transport), Tally()).failed.append(
                (requirement, detail)
            )
    order = ["card", *TRANSPORTS_10]
    return dict(sorted(out.items(), key=lambda kv: [*order, kv[0]].index(kv[0])))


def read_junit_10(path: Path) -> Tally:
    """The 1.0 kit's JUnit file: every test (pytest's outcome), whatever it checked."""
    tally = Tally()
    for case in ET.parse(path).iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test = f"{classname.removeprefix('tests.compatibility.')}::{name}"
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        if failure is not None and test in KNOWN_10:
            tally.add("known", test, KNOWN_10[test])
        elif failure is not None:
            tally.add("failed", test, first_line(failure.text or failure.get("message") or ""))
        elif error is not None:
            tally.add("error", test, first_line(error.get("message") or error.text or ""))
        elif skipped is not None:
            if skipped.get("type") == "pytest.xfail":
                tally.add("xfailed", test)
            else:
                tally.add("skipped", test, (skipped.get("message") or "").removeprefix("Skipped: "))
        else:
            tally.add("passed", test)
            if test in KNOWN_10:
                tally.passing_known.append(test)
    return tally


def show(label: str, tally: Tally, skips: bool) -> None:
    took = f"  [{elapsed(tally.seconds)}]" if tally.seconds else ""
    say(f"  {label:<28} {tally.line()}{took}")
    for test, detail in tally.failed:
        say(f"      FAILED {test}")
        if detail:
            say(f"             {detail}")
    for test, why in tally.known:
        say(f"      KNOWN  {test}")
        say(f"             {why}")
    for test in tally.passing_known:
        say(f"      PASSES NOW (drop it from KNOWN_10) {test}")
    if skips:
        for reason, n in tally.skips.most_common():
            say(f"      skip x{n}: {reason}")


# --- the kits ----------------------------------------------------------------------------


def kit_env(python: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_kit03(kit: Path, reports: Path, args) -> dict[str, Tally]:
    python = kit_venv(
        "tck03", kit, [kit / "requirements.txt"], ["-r", "requirements.txt", *EXTRA_03]
    )
    server = Taskdeck(reports / "server-tck03.log", args.web, args.workers, args.server_env)
    results: dict[str, Tally] = {}
    try:
        server.start()
        card = server.card()
        declared = [card.get("preferredTransport", "JSONRPC")] + [
            i.get("transport") for i in card.get("additionalInterfaces", [])
        ]
        transports = list(dict.fromkeys(TRANSPORTS_03[t] for t in declared if t in TRANSPORTS_03))
        if args.tck03_transports:
            transports = args.tck03_transports.split(",")
        named = ", ".join(transports)
        say(f"[tck03] Taskdeck on {server.url} (the card's 0.3 fields declare {named})")
        # as run_tck.py --category all: with one transport every category runs once; with
        # several, each single-client category per transport, then equivalence across all
        runs: list[tuple[str, str, str | None, str | None]] = []
        for category, path, markers in CATEGORIES_03:
            if len(transports) > 1 and category == "transport-equivalence":
                continue
            for transport in transports if len(transports) > 1 else [None]:
                runs.append((category, path, markers, transport))
        if len(transports) > 1:
            _, path, markers = CATEGORIES_03[2]
            runs.append(("transport-equivalence", path, markers, ",".join(transports)))
        for category, path, markers, transport in runs:
            if category == "mandatory" and transport and "jsonrpc" not in transport.split(","):
                path, markers = "tests/mandatory/protocol/", "mandatory_protocol"
            label = f"{category}" + (f" [{transport}]" if transport else "")
            out = reports / f"tck03-{category}{'-' + transport if transport else ''}.json"
            out.unlink(missing_ok=True)
            cmd = [
                str(python), "-m", "pytest", path, f"--sut-url={server.url}/a2a/",
                "--test-scope=all", "--tb=short", "-q", "-p", "no:cacheprovider",
                "--json-report", f"--json-report-file={out}",
            ]  # fmt: skip
            if markers:
                cmd += ["-m", markers]
            if transport:
                cmd += ["--transports", transport]
            tally = Tally()
            started = time.monotonic()
            with open(reports / "tck03-pytest.log", "a") as log:
                log.write(f"\n===== {label}: {' '.join(cmd)}\n")
                log.flush()
                done = subprocess.run(
                    cmd, cwd=kit, env=kit_env(python), stdout=log, stderr=subprocess.STDOUT
                )
            tally.seconds = time.monotonic() - started
            if not out.exists():
                raise KitError(f"0.3 kit wrote no report for {label} (exit {done.returncode})")
            read_json_report(out, tally)
            if done.returncode not in (0, 1, 5) and not tally.failed:
                tally.add("error", label, f"pytest exited {done.returncode}: see tck03-pytest.log")
            results[label] = tally
            show(label, tally, args.skips)
    finally:
        server.stop()
    return results


def run_kit10(kit: Path, reports: Path, args) -> dict[str, Tally]:
    python = kit_venv("tck10", kit, [kit / "pyproject.toml"], ["-e", str(kit)])
    server = Taskdeck(reports / "server-tck10.log", args.web, args.workers, args.server_env)
    try:
        server.start()
        interfaces = server.card().get("supportedInterfaces", [])
        declared = ", ".join(
            f"{i.get('protocolBinding')} {i.get('protocolVersion')} {i.get('url')}"
            for i in interfaces
        )
        say(f"[tck10] Taskdeck on {server.url} (the card declares {declared})")
        junit = reports / "tck10-junit.xml"
        junit.unlink(missing_ok=True)
        # run_tck.py's own report paths (./reports in the clone) are overridden: pytest
        # keeps the last of a repeated option
        cmd = [
            str(python), "run_tck.py", "--sut-host", server.url,
            *(["--transport", args.tck10_transports] if args.tck10_transports else []),
            "--", "-p", "no:cacheprovider", f"--junitxml={junit}",
            f"--compatibility-report={reports / 'tck10-compatibility'}",
            f"--html={reports / 'tck10-pytest.html'}", "--self-contained-html",
        ]  # fmt: skip
        started = time.monotonic()
        with open(reports / "tck10-pytest.log", "w") as log:
            done = subprocess.run(
                cmd, cwd=kit, env=kit_env(python), stdout=log, stderr=subprocess.STDOUT
            )
        seconds = time.monotonic() - started
    finally:
        server.stop()
    compat = reports / "tck10-compatibility.json"
    if not junit.exists() or not compat.exists():
        code = done.returncode
        raise KitError(
            f"1.0 kit wrote no JUnit or compatibility report (exit {code}): see tck10-pytest.log"
        )
    # per transport: the kit's own counts (requirements checked); then its tests as pytest
    # counts them, with the failed ones
    results = read_compat_10(compat)
    tests = read_junit_10(junit)
    tests.seconds = seconds
    for transport, tally in results.items():
        show(transport, tally, False)
    show("tests", tests, args.skips)
    results["tests"] = tests
    if done.returncode not in (0, 1) and not tests.failed:
        results["run"] = Tally()
        results["run"].add("error", "run_tck.py", f"exited {done.returncode}: see tck10-pytest.log")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tck03", type=Path, help="clone of a2a-tck at tag 0.3.0.beta3")
    parser.add_argument("--tck10", type=Path, help="clone of a2a-tck at branch 1.0-dev")
    parser.add_argument("--reports", type=Path, default=WORK / "reports")
    parser.add_argument("--web", type=int, default=2, help="web processes (as make run)")
    parser.add_argument("--workers", type=int, default=2, help="agent workers (as make run)")
    parser.add_argument("--skips", action="store_true", help="list skip reasons, grouped")
    parser.add_argument("--tck03-transports", help="instead of the 0.3 card's: jsonrpc,grpc,rest")
    parser.add_argument("--tck10-transports", help="the 1.0 kit's --transport filter")
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one more setting for the Taskdeck under test (repeatable)",
    )
    args = parser.parse_args()
    kits = [(n, d) for n, d in (("tck03", args.tck03), ("tck10", args.tck10)) if d]
    if not kits:
        parser.error("name at least one kit: --tck03 DIR and/or --tck10 DIR (docs/conformance.md)")
    for item in args.server_env:
        if "=" not in item:
            parser.error(f"--server-env {item!r}: expected NAME=VALUE")
    for _, kit in kits:
        if not (kit / "run_tck.py").exists():
            parser.error(f"{kit} is not a clone of a2a-tck (no run_tck.py)")
    reports = args.reports.resolve()
    reports.mkdir(parents=True, exist_ok=True)
    for old in reports.glob("tck*"):
        old.unlink()

    def interrupted(signum, frame):
        raise KeyboardInterrupt  # unwinds through the finally blocks that stop the server

    signal.signal(signal.SIGTERM, interrupted)
    summary: dict[str, dict] = {}
    broken = False
    for name, kit in kits:
        say(f"== {name}: {kit.resolve()}")
        started = time.monotonic()
        try:
            results = (run_kit03 if name == "tck03" else run_kit10)(kit.resolve(), reports, args)
            summary[name] = {k: v.as_json() for k, v in results.items()}
        except KitError as error:
            say(f"  ERROR: {error}")
            summary[name] = {"error": str(error)}
            broken = True
        except KeyboardInterrupt:
            say("  interrupted: server stopped")
            return 130
        say(f"   {name} took {elapsed(time.monotonic() - started)}")
    (reports / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    # tests that failed (the 1.0 kit's per-transport rows repeat its tests' failures)
    failed = sum(
        len(t["failed"])
        for kit in summary.values()
        for row, t in kit.items()
        if isinstance(t, dict) and row not in ("card", *TRANSPORTS_10)
    )
    say(f"== reports in {reports}")
    if broken:
        return 2
    if failed:
        say(f"== {failed} failed")
        return 1
    say("== no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
