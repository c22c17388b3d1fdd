"""A PostgreSQL server for the store tests: CI's, or a throwaway one started here.

CI (`.ci/run`) starts a server and sets ``KOMPAKT_TEST_POSTGRES``. Outside CI, when the
server binaries exist (Debian: /usr/lib/postgresql/*/bin), a throwaway cluster is
started in a temporary directory; otherwise the PostgreSQL tests skip with the reason.
In CI (env ``CI`` set) a missing server is a failure, never a skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ENV = "KOMPAKT_TEST_POSTGRES"


def _bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the `postgres` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a cluster in a temp dir on a free port; yields its DSN; stops it after."""
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl) found")
    data = tempfile.mkdtemp(prefix="kompakt-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres")
    port = _free_port()
    run: dict[str, Any] = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run(
        _as_postgres([f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]), **run
    )
    opts = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_postgres(
            [f"{bindir}/pg_ctl", "-D", data, "-o", opts, "-l", f"{data}/log", "-w", "start"]
        ),
        **run,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(data, ignore_errors=True)


def reachable(dsn: str) -> str | None:
    """None when a connection works, else why not."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'kompakt[postgres]')"
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as e:
        return f"cannot connect to {dsn}: {e}"
    return None
