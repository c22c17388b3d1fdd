"""`kompakt batch`: resumable, a bad file skipped, workers and Ray give identical outputs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from clihelp import SMALL, assert_one_line_error, invoke, run

import kompakt
from kompakt.eval.batch import MANIFEST, BatchJob, plan, run_batch
from kompakt.index import MessageIndex


def corrupt_name(count: int) -> str:
    """The corrupt file of an archive of `count`: the one in the middle."""
    return f"run-{count // 2:03d}.json"


def _transcript(rng: random.Random, n: int) -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix issue #{n}: tests in tests/test_mod{n}.py fail."},
    ]
    for step in range(rng.randint(4, 24)):
        cid = f"call_{n}_{step}"
        path = f"src/pkg/mod{rng.randint(0, 9)}.py"
        msgs.append(
            {
                "role": "assistant",
                "content": f"Step {step}: look at {path}.",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"cat {path}"}),
                        },
                    }
                ],
            }
        )
        body = "\n".join(
            f"line {i}: value = {rng.randint(0, 10**6)}" for i in range(rng.randint(5, 80))
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": body})
    msgs.append({"role": "assistant", "content": f"Done with issue #{n}."})
    return msgs


def make_archive(root: Path, count: int) -> Path:
    """`count` generated OpenAI transcripts in nested folders; the middle one is corrupt."""
    rng = random.Random(7)
    src = root / "runs"
    for n in range(count):
        folder = src / f"batch{n % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"run-{n:03d}.json"
        if name == corrupt_name(count):
            (folder / name).write_text('[{"role": "user", "content": "cut off here')
        else:
            (folder / name).write_text(json.dumps(_transcript(rng, n)))
    return src


def _outputs(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def test_batch_resumes_and_reports_a_bad_file(tmp_path: Path) -> None:
    src = make_archive(tmp_path, 12)
    out = tmp_path / "out"
    r = invoke("batch", str(src), "-o", str(out), "--budget", "0.5", "--json")
    assert r.code == 1, r.stderr  # a failed file makes the exit code 1, the rest ran
    summary = json.loads(r.stdout)
    assert (summary["done"], summary["failed"]) == (11, 1)
    failure = summary["failures"][0]
    assert failure["relative"] == "batch0/run-006.json" and "JSON" in failure["error"]
    assert not any(p.name.endswith(".tmp") for p in out.rglob("*"))
    first = _outputs(out)
    assert len(first) == 11
    # every output is the same format, compacted to the budget
    sample = out / "batch0" / "run-000.json"
    conv = kompakt.load(sample)
    original = kompakt.load(src / "batch0" / "run-000.json")
    assert conv.format == "openai"
    assert MessageIndex(conv).total_tokens <= MessageIndex(original).total_tokens // 2

    # a rerun skips everything already written; a removed output is redone
    (out / "batch1" / "run-001.json").unlink()
    r = invoke("batch", str(src), "-o", str(out), "--budget", "0.5", "--json")
    summary = json.loads(r.stdout)
    assert (summary["done"], summary["skipped"], summary["failed"]) == (1, 10, 1)
    assert _outputs(out) == first

    # other settings never resume into the same folder: refused, or redone with --force
    r = invoke("batch", str(src), "-o", str(out), "--budget", "0.3")
    assert_one_line_error(r, "other settings", "budget", "--force")
    assert _outputs(out) == first
    r = invoke("batch", str(src), "-o", str(out), "--budget", "0.3", "--force", "--json")
    assert json.loads(r.stdout)["done"] == 11
    smaller = _outputs(out)
    assert smaller.keys() == first.keys() and smaller != first
    assert json.loads((out / MANIFEST).read_text())["budget"] == "0.3"


@pytest.mark.slow
def test_workers_and_ray_give_identical_outputs(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    src = make_archive(tmp_path, 200)
    a, b = tmp_path / "workers", tmp_path / "ray"
    r1 = invoke("batch", str(src), "-o", str(a), "--budget", "0.4", "--workers", "2")
    assert r1.code == 1, r1.stderr
    assert "199 done" in r1.stdout and "1 failed" in r1.stdout
    corrupt = corrupt_name(200)
    assert corrupt in r1.stdout and "kompakt: error: 1 of 200 file(s) failed" in r1.stderr
    r2 = invoke(
        "batch", str(src), "-o", str(b), "--budget", "0.4", "--ray", "local", "--workers", "2"
    )
    assert r2.code == 1, r2.stderr
    assert "199 done" in r2.stdout and corrupt in r2.stdout
    outa, outb = _outputs(a), _outputs(b)
    assert len(outa) == 199 and f"batch1/{corrupt}" not in outa
    assert outa == outb


def test_batch_eval_mode_and_subprocess(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / SMALL.name).write_bytes(SMALL.read_bytes())
    (src / "notes.txt").write_text("not a transcript: ignored")
    out = tmp_path / "out"
    r = run(
        "batch",
        str(src),
        "-o",
        str(out),
        "--eval",
        "--budget",
        "0.5,0.2",
        "--strategies",
        "truncation,extractive_digest",
    )
    assert r.code == 0, r.stderr
    data = json.loads((out / (SMALL.name + ".eval.json")).read_text())
    assert [(x["strategy"], x["budget"]) for x in data["rows"]] == [
        ("truncation", "50%"),
        ("extractive_digest", "50%"),
        ("truncation", "20%"),
        ("extractive_digest", "20%"),
    ]
    assert "seconds" not in data["rows"][0]  # outputs are reproducible, so no wall time


def test_run_batch_library_in_process(tmp_path: Path) -> None:
    src = make_archive(tmp_path, 5)
    job = BatchJob(budget="2000", strategy="truncation")
    items = plan(src, tmp_path / "o", job)
    assert [i.relative for i in items] == [
        "batch0/run-000.json",
        "batch0/run-003.json",
        "batch1/run-001.json",
        "batch1/run-004.json",
        "batch2/run-002.json",
    ]
    seen: list[str] = []
    summary = run_batch(job, items, on_result=lambda r: seen.append(r.status))
    assert sorted(seen) == ["done"] * 4 + ["failed"] and summary.count("done") == 4
    assert [r.status for r in summary.results][4] == "failed"  # run-002, in input order
    again = run_batch(job, items)
    assert (again.count("skipped"), again.count("failed")) == (4, 1)
    assert run_batch(job, items, force=True).count("done") == 4
