#!/usr/bin/env python3
"""What the model sees of each fixture in bench/fixtures/, side by side (Python 3.11+, standard library).

    bench/savings.py --squeez BIN --jkz 'CMD ARGS' [--runs N] [--json FILE] [--markdown FILE] [FIXTURE_DIR...]

Columns, for every fixture:
  client  Claude Code alone: the raw output under the client's rule (below);
  squeez  `squeez filter HINT < output.txt`, then the client's rule;
  jkz     the --jkz command with output.txt on stdin and JKZ_EXIT_CODE / JKZ_COMMAND in
          its environment ({command} and {exit_code} in its words are replaced by them, so
          no shell need stand between), run in a scratch git repository with a state/
          directory (a project that opted in, so jkz can keep the full output), then the
          client's rule.
Both reducers stand in the command's place (a wrap keeps its exit status), so the client
still applies its own rule to what they print.

The client's rule for a Bash result (measured on Claude Code 2.1.197 and 2.1.332, see
docs/tool-output-guard.md and shared/tool_output/client.rs):
  - exit 0, at most 30,000 characters: shown whole;
  - exit 0, more: persisted to a file; the model sees its first 2,000 bytes, cut after the
    last newline in them, inside a <persisted-output> note (PERSISTED_WRAPPER_CHARS, a
    constant: the note's text, ~240 characters with a typical path);
  - exit N != 0: `Exit code N` and the output's first FAIL_READ_CHARS characters, trailing
    white space trimmed; when that text is over FAIL_WHOLE_CHARS characters, its first and
    last FAIL_END_CHARS around `... [K characters truncated] ...` (measured on 2.1.332,
    docs/clients.md "What a failing command shows"; nothing else reaches the model, and
    nothing is kept).

A signal line (signals.txt) counts as kept when it is a whole line of the view; a line the
view cuts in the middle is not whole. Both sides are compared without ANSI colour codes and
without a trailing carriage return (dpkg ends its lines with CR LF), so a reducer that drops
colour or line-end noise is not charged for it. Characters are Unicode code points.

"Text found (lenient)" counts a signal line whose text, without colour and surrounding
blanks, appears anywhere in the view's whole lines: what a reducer keeps but re-indents or
prefixes. The gate is the strict count.

Retrievable: the whole output is in the view, or the view names a file holding exactly the
raw output (the client's persisted file counts for the client column).

Latency: each command is a whole process, spawn to exit, stdin from the file, stdout read;
RUNS runs per fixture, taking turns; `cat` is timed the same way as the floor (a process
that only copies its input).
"""
import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

INLINE_CHARS = 30_000
PREVIEW_BYTES = 2_000
PERSISTED_WRAPPER_CHARS = 240
FAIL_READ_CHARS = 30_000
FAIL_WHOLE_CHARS = 11_024
FAIL_END_CHARS = 5_000
# Outputs the client shows whole on success; latency targets are for these.
SMALL_CHARS = 30_000

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PATH_TOKEN = re.compile(r"/[^\s'\"\]\[)(<>,;]+")


def client_view(text: str, exit_code: int) -> dict:
    """What the client puts in the window for a Bash result `text` ending with `exit_code`."""
    if exit_code != 0:
        read = text[:FAIL_READ_CHARS]
        whole = f"Exit code {exit_code}\n" + read.rstrip()
        # The last line read is whole only when the output ends there.
        read_cut = len(text) > FAIL_READ_CHARS and not read.endswith("\n")
        if len(whole) <= FAIL_WHOLE_CHARS:
            return {"view": whole, "chars": len(whole), "mode": "fail-whole",
                    "partial": [whole.count("\n")] if read_cut else [], "kept_by_client": False}
        head, tail = whole[:FAIL_END_CHARS], whole[-FAIL_END_CHARS:]
        view = f"{head}\n\n... [{len(whole) - 2 * FAIL_END_CHARS} characters truncated] ...\n\n{tail}"
        lines = view.count("\n")
        partial = []
        if not head.endswith("\n"):
            partial.append(head.count("\n"))
        if whole[-FAIL_END_CHARS - 1] != "\n":
            partial.append(head.count("\n") + 4)
        if read_cut:
            partial.append(lines)
        return {"view": view, "chars": len(view), "mode": "fail-ends", "partial": partial,
                "kept_by_client": False}
    if len(text) <= INLINE_CHARS:
        return {"view": text, "chars": len(text), "mode": "inline", "partial": [], "kept_by_client": False}
    first = text.encode("utf-8")[:PREVIEW_BYTES]
    nl = first.rfind(b"\n")
    preview = (first[:nl] if nl >= 0 else first).decode("utf-8", errors="ignore")
    return {"view": preview, "chars": len(preview) + PERSISTED_WRAPPER_CHARS, "mode": "persisted",
            "partial": [preview.count("\n")] if nl < 0 else [], "kept_by_client": True}


def norm(line: str) -> str:
    """A line as compared: without colour codes and without a trailing carriage return."""
    return ANSI.sub("", line).removesuffix("\r")


def whole_lines(view: str, partial: list[int]) -> set[str]:
    """The view's lines, without those it shows cut (by index)."""
    return {norm(l) for i, l in enumerate(view.split("\n")) if i not in partial}


def signals_kept(signals: list[str], view: dict) -> int:
    lines = whole_lines(view["view"], view["partial"])
    return sum(1 for s in signals if norm(s) in lines)


def signals_found(signals: list[str], view: dict) -> int:
    """The lenient count: the signal line's text, without colour and surrounding blanks, is
    somewhere in the view's whole lines (a reducer that re-indents or prefixes a line keeps it)."""
    lines = whole_lines(view["view"], view["partial"])
    text = "\n".join(lines)
    return sum(1 for s in signals if norm(s).strip() in text)


def retrievable(view: dict, raw: bytes, raw_text: str) -> bool:
    if view["mode"] == "inline" and view["view"].endswith(raw_text):
        return True
    # The client trims a failing output's trailing white space.
    if view["mode"] == "fail-whole" and view["view"].endswith(raw_text.rstrip()):
        return True
    if view["kept_by_client"] and view.get("of_raw"):
        return True
    for token in set(PATH_TOKEN.findall(view["view"])):
        p = Path(token)
        try:
            if p.is_file() and p.stat().st_size == len(raw) and p.read_bytes() == raw:
                return True
        except OSError:
            continue
    return False


def timed(argv: list[str], stdin_path: Path, env: dict, cwd: str) -> tuple[float, bytes]:
    with open(stdin_path, "rb") as f:
        start = time.perf_counter()
        done = subprocess.run(argv, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        ms = (time.perf_counter() - start) * 1000
    return ms, done.stdout


def scratch_project() -> str:
    d = tempfile.mkdtemp(prefix="jkz-savings-")
    subprocess.run(["git", "init", "-q", d], check=True)
    os.mkdir(os.path.join(d, "state"))
    return d


def empty_state(project: str) -> None:
    state = os.path.join(project, "state")
    for entry in os.listdir(state):
        p = os.path.join(state, entry)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def measure(fixture: Path, squeez: str, jkz: list[str], runs: int, project: str, squeez_home: str) -> dict:
    meta = tomllib.loads((fixture / "fixture.toml").read_text(encoding="utf-8"))
    raw = (fixture / "output.txt").read_bytes()
    text = raw.decode("utf-8")
    signals = (fixture / "signals.txt").read_bytes().decode("utf-8").removesuffix("\n").split("\n")
    code = meta["exit_code"]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("JKZ_", "SQUEEZ_"))}
    # squeez reads its config from ~/.claude/squeez: an empty one gives its defaults.
    squeez_env = dict(base_env, HOME=squeez_home, SQUEEZ_DIR=os.path.join(squeez_home, "squeez"))
    jkz_env = dict(base_env, JKZ_EXIT_CODE=str(code), JKZ_COMMAND=meta["command"])
    jkz_argv = [a.replace("{command}", meta["command"]).replace("{exit_code}", str(code)) for a in jkz]
    tools = {
        "cat": (["cat"], base_env),
        "squeez": ([squeez, "filter", meta["squeez_hint"]], squeez_env),
        "jkz": (jkz_argv, jkz_env),
    }
    times = {t: [] for t in tools}
    outs = {}
    for _ in range(runs):
        for tool, (argv, env) in tools.items():
            if tool == "jkz":
                empty_state(project)
            ms, out = timed(argv, fixture / "output.txt", env, project)
            times[tool].append(ms)
            if tool not in outs or tool == "jkz":
                # jkz's last run: its kept file (if any) is still in state/ for the retrievable check
                outs[tool] = out

    result = {
        "name": fixture.name,
        "family": meta["family"],
        "command": meta["command"],
        "exit_code": code,
        "raw_bytes": len(raw),
        "raw_chars": len(text),
        "signals": len(signals),
        "cat_p50_ms": p50(times["cat"]),
        "views": {},
    }
    client = client_view(text, code)
    client["of_raw"] = True
    views = {"client": client}
    for tool in ("squeez", "jkz"):
        views[tool] = client_view(outs[tool].decode("utf-8", errors="replace"), code)
        views[tool]["output_chars"] = len(outs[tool].decode("utf-8", errors="replace"))
    for tool, v in views.items():
        entry = {
            "chars": v["chars"],
            "mode": v["mode"],
            "kept": signals_kept(signals, v),
            "found": signals_found(signals, v),
            "retrievable": retrievable(v, raw, text),
        }
        if tool != "client":
            entry["output_chars"] = v["output_chars"]
            entry["p50_ms"] = p50(times[tool])
        result["views"][tool] = entry
    empty_state(project)
    return result


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def change(new: float, old: float) -> str:
    return f"{100 * (new - old) / old:+.1f}%" if old else "n/a"


def totals(results: list[dict]) -> dict:
    raw = sum(r["raw_chars"] for r in results)
    signals = sum(r["signals"] for r in results)
    client = sum(r["views"]["client"]["chars"] for r in results)
    out = {"fixtures": len(results), "raw_chars": raw, "signals": signals, "columns": {}}
    for tool in ("client", "squeez", "jkz"):
        chars = sum(r["views"][tool]["chars"] for r in results)
        kept = sum(r["views"][tool]["kept"] for r in results)
        col = {
            "chars": chars,
            "reduction_vs_raw": 1 - chars / raw if raw else None,
            "change_vs_client": (chars - client) / client if client else None,
            "kept": kept,
            "kept_share": kept / signals if signals else None,
            "found": sum(r["views"][tool]["found"] for r in results),
            "fixtures_all_kept": sum(1 for r in results if r["views"][tool]["kept"] == r["signals"]),
            "retrievable": sum(1 for r in results if r["views"][tool]["retrievable"]),
        }
        if tool != "client":
            col["fewer_signals_than_client"] = [
                r["name"] for r in results if r["views"][tool]["kept"] < r["views"]["client"]["kept"]]
            col["more_chars_than_client_where_shown_whole"] = [
                r["name"] for r in results
                if r["views"]["client"]["mode"] in ("inline", "fail-whole")
                and r["views"][tool]["chars"] > r["views"]["client"]["chars"]]
            small = [r for r in results if r["raw_chars"] <= SMALL_CHARS]
            col["p50_ms_all"] = p50([r["views"][tool]["p50_ms"] for r in results])
            col["p50_ms_up_to_30k"] = p50([r["views"][tool]["p50_ms"] for r in small])
            col["added_p50_ms_up_to_30k"] = p50([r["views"][tool]["p50_ms"] - r["cat_p50_ms"] for r in small])
        out["columns"][tool] = col
    out["cat_p50_ms_up_to_30k"] = p50([r["cat_p50_ms"] for r in results if r["raw_chars"] <= SMALL_CHARS])
    return out


def markdown(results: list[dict], tot: dict, jkz_cmd: str, squeez_version: str, runs: int) -> str:
    lines = []
    lines.append(f"Columns: what the model sees (characters) and signal lines kept. "
                 f"{squeez_version} (`squeez filter HINT`); jkz: `{jkz_cmd}`; {runs} runs per fixture.")
    lines.append("")
    lines.append("| fixture | exit | raw | Claude Code alone | squeez | jkz | signals | kept: client | squeez | jkz | ms: squeez | jkz | cat |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        v = r["views"]
        lines.append(
            f"| {r['name']} | {r['exit_code']} | {r['raw_chars']:,} | {v['client']['chars']:,} ({v['client']['mode']}) "
            f"| {v['squeez']['chars']:,} | {v['jkz']['chars']:,} | {r['signals']} "
            f"| {v['client']['kept']} | {v['squeez']['kept']} | {v['jkz']['kept']} "
            f"| {v['squeez']['p50_ms']:.2f} | {v['jkz']['p50_ms']:.2f} | {r['cat_p50_ms']:.2f} |")
    c = tot["columns"]
    lines.append("")
    lines.append(f"Totals over {tot['fixtures']} fixtures, {tot['raw_chars']:,} raw characters, {tot['signals']:,} signal lines:")
    lines.append("")
    lines.append("| | characters the model sees | vs raw | vs Claude Code alone | signal lines kept | fixtures with all kept | text found (lenient) | retrievable | p50 ms (≤ 30 KB; added over cat) |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    names = {"client": "Claude Code alone", "squeez": squeez_version, "jkz": f"jkz (`{jkz_cmd}`)"}
    for tool in ("client", "squeez", "jkz"):
        col = c[tool]
        vs_client = "—" if tool == "client" else change(col["chars"], c["client"]["chars"])
        ms = "—" if tool == "client" else f"{col['p50_ms_up_to_30k']:.2f} ({col['added_p50_ms_up_to_30k']:+.2f})"
        lines.append(
            f"| {names[tool]} | {col['chars']:,} | {-100 * col['reduction_vs_raw']:+.1f}% | {vs_client} "
            f"| {pct(col['kept'], tot['signals'])} ({col['kept']:,}) | {col['fixtures_all_kept']} of {tot['fixtures']} "
            f"| {pct(col['found'], tot['signals'])} | {col['retrievable']} of {tot['fixtures']} | {ms} |")
    lines.append("")
    for tool in ("squeez", "jkz"):
        fewer = c[tool]["fewer_signals_than_client"]
        more = c[tool]["more_chars_than_client_where_shown_whole"]
        lines.append(f"- {names[tool]}: fewer signal lines than the client alone on {len(fewer)} fixture(s)"
                     + (f" ({', '.join(fewer)})" if fewer else "")
                     + f"; more characters than the client where it shows the output whole on {len(more)}"
                     + (f" ({', '.join(more)})" if more else "") + ".")
    lines.append(f"- cat (the floor) p50 on outputs ≤ 30 KB: {tot['cat_p50_ms_up_to_30k']:.2f} ms.")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--squeez", required=True, help="the squeez binary")
    ap.add_argument("--jkz", required=True, help="the jkz reducer command line (output on stdin)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", help="write the tables here as well")
    ap.add_argument("fixtures", nargs="*", help="fixture directories (default: every one in bench/fixtures)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    root = Path(__file__).resolve().parent / "fixtures"
    dirs = [Path(d) for d in args.fixtures] or sorted(p for p in root.iterdir() if p.is_dir())
    # The reducers run in a scratch directory: a relative program path is made absolute here.
    jkz = shlex.split(args.jkz)
    if jkz and "/" in jkz[0]:
        jkz[0] = os.path.abspath(jkz[0])
    squeez = os.path.abspath(args.squeez) if "/" in args.squeez else args.squeez
    squeez_version = subprocess.run([squeez, "--version"], capture_output=True, text=True).stdout.strip()
    project = scratch_project()
    squeez_home = tempfile.mkdtemp(prefix="jkz-savings-squeez-")
    try:
        results = []
        for d in dirs:
            r = measure(d, squeez, jkz, args.runs, project, squeez_home)
            results.append(r)
            v = r["views"]
            print(f"{r['name']}: raw {r['raw_chars']:,}, client {v['client']['chars']:,}, squeez {v['squeez']['chars']:,}, "
                  f"jkz {v['jkz']['chars']:,}; kept {v['client']['kept']}/{v['squeez']['kept']}/{v['jkz']['kept']} "
                  f"of {r['signals']}", file=sys.stderr)
    finally:
        shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(squeez_home, ignore_errors=True)
    tot = totals(results)
    md = markdown(results, tot, args.jkz, squeez_version, args.runs)
    print(md, end="")
    doc = {
        "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": {"inline_chars": INLINE_CHARS, "preview_bytes": PREVIEW_BYTES,
                  "persisted_wrapper_chars": PERSISTED_WRAPPER_CHARS, "fail_read_chars": FAIL_READ_CHARS,
                  "fail_whole_chars": FAIL_WHOLE_CHARS, "fail_end_chars": FAIL_END_CHARS},
        "squeez": squeez_version,
        "jkz": args.jkz,
        "runs": args.runs,
        "fixtures": results,
        "totals": tot,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
