"""Copy a recorded measurement's table into README.md, between its markers.

The README's first screen shows the estimators side by side on one scenario. That table is not
typed: ``docs/tools/record.py`` records it under ``docs/measurements/NAME.md`` and this script
puts its body between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in README.md;
``tests/test_docs_measurements.py`` checks that the two agree. Usage::

    python docs/tools/readme_table.py peers-readme
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEPARATOR = "<!-- body -->\n"


def body(name: str) -> str:
    """The body of ``docs/measurements/NAME.md`` (what record.py wrote below its header)."""
    text = (ROOT / "docs" / "measurements" / f"{name}.md").read_text()
    return text.split(SEPARATOR, 1)[1].strip()


def block(readme: str, name: str) -> re.Match:
    """The README's text between the markers of ``name``."""
    begin, end = (re.escape(f"<!-- {name}:{tag} -->") for tag in ("begin", "end"))
    found = re.search(rf"{begin}\n(.*?)\n?({end})",
                      readme, flags=re.S)
    if found is None:
        raise SystemExit(f"README.md has no <!-- {name}:begin --> ... <!-- {name}:end --> block")
    return found


def main(argv=None) -> None:
    (name,) = argv if argv is not None else sys.argv[1:]
    path = ROOT / "README.md"
    readme = path.read_text()
    found = block(readme, name)
    path.write_text(readme[:found.start(1)] + body(name) + "\n" + readme[found.start(2):])
    print(f"README.md: the {name} block now holds docs/measurements/{name}.md's table")


if __name__ == "__main__":
    main()
