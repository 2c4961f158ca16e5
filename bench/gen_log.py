#!/usr/bin/env python3
"""Writes a synthetic agent log of SIZE bytes to stdout, with protected blocks
(all four forms, several kinds, a few unterminated) scattered through it.

    gen_log.py SIZE [SEED]      SIZE accepts K/M/G suffixes (binary units)

The log is built from 64 distinct 1 MiB segments written in a seeded random
order, so even 4 GiB streams out at disk/pipe speed without being stored.
"""
import random
import sys

MIB = 1 << 20


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def line(rng, n):
    kind = rng.random()
    if kind < 0.6:
        return f"2025-03-01T12:{n % 60:02}:{n % 59:02}Z INFO step {n}: compiled module_{n % 997}.rs in {rng.randint(1, 999)} ms\n"
    if kind < 0.8:
        return f"    at jkz::worker::run (worker.rs:{n % 800}) état={n % 7} → ok\n"
    if kind < 0.95:
        return "x" * rng.randint(0, 300) + "\n"
    return f"## Section {n}\n"


BLOCKS = [
    '<!-- jkz:verdict-json {{"verdict":"FAIL","n":{n}}} -->\n',
    "```decisions\n- decision {n}: keep the cache\n- and the index\n```\n",
    "<compact-plan>\n1. step {n}\n2. verify\n</compact-plan>\n",
    "## TL;DR\nrun {n} passed 41 of 42 tests\n\n## Details\n",
    "<!-- jkz:propose-issue: follow-up {n} | flaky test -->\n",
    "~~~plan-digest\nphase {n}: building\n~~~\n",
]


def segment(rng, seed):
    out = []
    size = 0
    n = seed * 100000
    while size < MIB:
        if rng.random() < 0.002:
            text = rng.choice(BLOCKS).format(n=n)
        elif rng.random() < 0.0002:
            text = "```tldr\nnever closed " + str(n) + "\n"  # unterminated fence
        else:
            text = line(rng, n)
        out.append(text)
        size += len(text.encode())
        n += 1
    return "".join(out).encode()[:MIB]


def main():
    size = parse_size(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 42)
    segments = [segment(rng, i) for i in range(64)]
    out = sys.stdout.buffer
    written = 0
    # A verdict near the start, the main body, a verdict at the very end.
    head = b'<!-- jkz:verdict-json {"verdict":"PASS","at":"start"} -->\n'
    tail = b'\n## Verdict\n<!-- jkz:verdict-json {"verdict":"FAIL","at":"end"} -->\n'
    out.write(head)
    written += len(head)
    while written + len(tail) < size:
        seg = segments[rng.randrange(64)]
        seg = seg[: size - len(tail) - written]
        out.write(seg)
        written += len(seg)
    out.write(tail[: size - written])
    out.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
