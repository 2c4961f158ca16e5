#!/usr/bin/env python3
"""Writes a synthetic event log, as jkz writes it, into OUTDIR (a state
directory's events/): EVENTS events about ISSUES issues over the last DAYS
days, one segment per day (split at 8 MiB, as jkz splits them), each
segment's modification time its day's end, so that the first jkz reader
closes (gzip-compresses) every past day.

    gen_events.py EVENTS ISSUES DAYS OUTDIR [SEED]

Each issue goes plan -> building -> review -> qa -> done (or failed, one in
five), with a claim, agent runs (builder, judge, reviewer) with durations
and tokens, fix counts, compactions, locks and guarded tool output; the
rest of the EVENTS are tool_output.guarded and lock events spread over the
issues. Prints the issue with the most events (for `jkz events --issue`).
"""
import datetime as dt
import json
import os
import random
import sys

MAX_SEGMENT = 8 * 1024 * 1024


def main():
    events, issues, days, outdir = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 7)
    os.makedirs(outdir, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    start = now - dt.timedelta(days=days)
    span = (now - start).total_seconds()
    out = []  # (micros, line)
    counter = 0

    def add(at, kind, issue, session, payload):
        nonlocal counter
        counter += 1
        micros = int(at.timestamp() * 1_000_000)
        e = {"id": "%013x-%08x-%04x" % (micros, 1 + counter // 0x10000, counter % 0x10000), "type": kind,
             "timestamp": at.isoformat().replace("+00:00", "Z")}
        if issue is not None:
            e["issue"] = str(issue)
        if session is not None:
            e["session"] = session
        e["payload"] = payload
        out.append((micros, json.dumps(e, separators=(",", ":"))))

    per_issue = {}
    for issue in range(1, issues + 1):
        t = start + dt.timedelta(seconds=rng.uniform(0, span * 0.95))
        session = "chat-%d" % rng.randrange(issues // 4 + 1)
        add(t, "claim.taken", issue, session, {"worktree": None})
        phase = None
        n = 0
        for to in ["plan", "building", "review", "qa", "failed" if rng.random() < 0.2 else "done"]:
            add(t, "phase.changed", issue, None, {"from": phase, "to": to})
            n += 1
            phase = to
            if to in ("building", "review", "qa"):
                for role in {"building": ["builder"], "review": ["judge", "reviewer"], "qa": ["judge"]}[to]:
                    ms = int(rng.lognormvariate(11, 1))
                    t += dt.timedelta(milliseconds=ms)
                    add(t, "agent.finished", issue, None, {"role": role, "status": "ok" if rng.random() < 0.9 else "failed",
                        "duration_ms": ms, "record": "r%d" % counter, "tokens": {"input_tokens": rng.randrange(1000, 90000), "output_tokens": rng.randrange(100, 9000)}})
                    n += 1
            if to in ("review", "qa"):
                add(t, "state.changed", issue, None, {"field": to + "_fix_count", "from": None, "to": str(rng.randrange(0, 4))})
                n += 1
            if rng.random() < 0.3:
                add(t, "session.compacted", None, session, {"trigger": "auto", "snapshot": None})
            t += dt.timedelta(seconds=rng.lognormvariate(7.5, 1))
            if t > now:
                t = now
        add(t, "claim.released", issue, session, {})
        per_issue[issue] = n + 2
    while len(out) < events:
        issue = rng.randrange(1, issues + 1)
        t = start + dt.timedelta(seconds=rng.uniform(0, span))
        if rng.random() < 0.5:
            add(t, "tool_output.guarded", None, "chat-%d" % rng.randrange(issues // 4 + 1),
                {"tool": "Bash", "bytes_in": rng.randrange(30000, 900000), "bytes_out": 20000})
        else:
            add(t, rng.choice(["lock.acquired", "lock.released"]), issue, None,
                {"kind": "pipeline", "name": str(issue), "owner": "run:host:1"})
            per_issue[issue] += 1
    out.sort()
    # One segment per day, split at MAX_SEGMENT, as jkz names them.
    by_day = {}
    for micros, line in out:
        by_day.setdefault(dt.datetime.fromtimestamp(micros / 1e6, dt.timezone.utc).strftime("%Y%m%d"), []).append(line)
    for day, lines in by_day.items():
        n, size, f = 0, 0, None
        for line in lines:
            if f is None or size + len(line) + 1 > MAX_SEGMENT:
                if f:
                    f.close()
                name = os.path.join(outdir, "%s-%04d.jsonl" % (day, n))
                f = open(name, "w")
                n, size = n + 1, 0
            f.write(line + "\n")
            size += len(line) + 1
        f.close()
        end = dt.datetime.strptime(day, "%Y%m%d").replace(tzinfo=dt.timezone.utc) + dt.timedelta(days=1)
        stamp = min(end, now - dt.timedelta(hours=1)).timestamp()
        for k in range(n):
            os.utime(os.path.join(outdir, "%s-%04d.jsonl" % (day, k)), (stamp, stamp))
    busiest = max(per_issue, key=per_issue.get)
    print("%d events, %d issues, %d days; issue %d has %d events" % (len(out), issues, days, busiest, per_issue[busiest]))


main()
