"""Record a measurement for the documentation: run a command and keep its output with provenance.

Every measured table in the docs is a file under ``docs/measurements/`` written by this script,
never by hand. The file says which command made it, at which commit, on which machine and when, and
carries the SHA-256 of its body; ``tests/test_docs_measurements.py`` recomputes that hash, so an
edit by hand fails the tests. Usage::

    python docs/tools/record.py NAME [--markdown] [--from-file PATH] -- COMMAND [ARG ...]

``--markdown`` keeps the output as Markdown (for commands that print Markdown tables, such as
``mccard-report``); otherwise it is shown verbatim as a text block. ``--from-file PATH`` takes the
body from a file the command writes (``mccard-report STORE --out DIR`` writes ``DIR/report.md``)
instead of its standard output. The command must succeed, and the package's code and configs must
be committed: a measurement names the commit that made it."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENTS = ROOT / "docs" / "measurements"
HASH_LINE = "<!-- body-sha256: {} -->"
HASH_PATTERN = re.compile(r"^<!-- body-sha256: ([0-9a-f]{64}) -->$", re.MULTILINE)
SEPARATOR = "<!-- body -->\n"
# Lines of the body that name a temporary directory are kept as they were printed; image links of a
# report (its figures are not part of the docs) are dropped, with a note.
IMAGE = re.compile(r"^!\[.*\]\(.*\)\s*$")


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def split(text: str) -> tuple[str, str, str | None]:
    """(header, body, recorded hash) of a measurement file."""
    head, sep, body = text.partition(SEPARATOR)
    if not sep:
        raise ValueError("no '<!-- body -->' line: not written by docs/tools/record.py")
    match = HASH_PATTERN.search(head)
    return head, body, match.group(1) if match else None


def machine() -> str:
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        memory = f", {mem:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        memory = ""
    import numpy
    import scipy

    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs{memory}, "
            f"Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"scipy {scipy.__version__}")


def commit() -> str:
    git = ["git", "-C", str(ROOT)]
    rev = subprocess.run([*git, "rev-parse", "--short=10", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "mccard_dist", "conf"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        raise SystemExit("record: mccard_dist/ or conf/ has uncommitted changes; commit them first "
                         "so the measurement names the code that made it")
    return rev


def stores(command: list[str]) -> str:
    """Where a command reads results stores: each one's creation time and code fingerprint, as the
    store records them (a store does not know the commit that wrote it)."""
    import json

    import zarr

    out = []
    for arg in command:
        path = Path(arg)
        if path.suffix == ".zarr" and path.is_dir():
            attrs = zarr.open_group(str(path), mode="r").attrs
            runs = json.loads(attrs.get("runs", "[]") or "[]")
            last = runs[-1].get("finished") if runs else None
            code = attrs.get("code") or ""
            if code.startswith("{"):  # the package's part of a fingerprint with methods' own
                code = json.loads(code).get("package") or ""
            out.append(f"store `{path.name}` created {attrs.get('created', '?')}"
                       + (f", last run finished {last}" if last else "")
                       + (f", code fingerprint `{code[:12]}`" if code else ""))
    return "; ".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s NAME [--markdown] [--from-file PATH] [--note TEXT] -- COMMAND ...")
    parser.add_argument("name", help="file name under docs/measurements/ (without .md)")
    parser.add_argument("--markdown", action="store_true", help="the output is Markdown")
    parser.add_argument("--from-file", type=Path, help="take the body from this file")
    parser.add_argument("--note", default="", help="one line shown under the provenance")
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--" not in argv:
        parser.error("give the command after --")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        parser.error("give the command after --")
    if not re.fullmatch(r"[a-z0-9_\-]+", args.name):
        parser.error(f"name {args.name!r}: use lower-case letters, digits, '-' and '_'")
    rev = commit()
    started = dt.datetime.now(dt.UTC)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"record: the command failed (exit {done.returncode}); nothing written")
    minutes = (dt.datetime.now(dt.UTC) - started).total_seconds() / 60
    output = args.from_file.read_text() if args.from_file else done.stdout
    if args.markdown:
        lines = output.strip("\n").splitlines()
        kept = [line for line in lines if not IMAGE.match(line)]
        body = "\n".join(kept) + "\n"
        if len(kept) < len(lines):
            body += "\n*(The report's figures are not reproduced here.)*\n"
    else:
        body = "```text\n" + output.strip("\n") + "\n```\n"
    header = (
        "<!-- Written by docs/tools/record.py; do not edit: tests/test_docs_measurements.py "
        "checks the hash below. -->\n"
        + HASH_LINE.format(body_hash(body)) + "\n\n"
        + f"*Made by* `{shlex.join(command)}` *at commit* `{rev}`, {started:%Y-%m-%d %H:%M} UTC "
        + f"({minutes:.1f} min), *on* {machine()}"
        + "".join(f"; {part}" for part in (stores(command), args.note) if part) + ".\n\n"
    )
    MEASUREMENTS.mkdir(parents=True, exist_ok=True)
    path = MEASUREMENTS / f"{args.name}.md"
    path.write_text(header + SEPARATOR + body)
    print(f"record: wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
