"""The report's tables, paragraphs and lists as data, written as Markdown (``report.md``) or as
HTML (``report.html``) from the same rows.

A piece of text is a ``str``, a :class:`Strong` or a :class:`Code`, or a tuple of them shown one
after another. A document is a list of blocks: :class:`Table`, :class:`Paragraph`, :class:`Items`.
"""

from __future__ import annotations

from html import escape
from dataclasses import dataclass


class Strong(str):
    """Text shown in bold."""


class Code(str):
    """Text shown as code."""


@dataclass(frozen=True)
class Table:
    """A table: ``header`` and each row hold one piece of text per column; ``align`` has one
    letter per column, ``"l"`` or ``"r"`` (numbers, right-aligned in Markdown)."""

    header: tuple
    rows: list
    align: str


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of one piece of text."""

    text: object


@dataclass(frozen=True)
class Items:
    """A bulleted list, one piece of text per item."""

    items: list


def _md(piece) -> str:
    if isinstance(piece, tuple):
        return "".join(map(_md, piece))
    text = str(piece).replace("|", "\\|").replace("\n", " ")  # a bar would end a table cell
    if isinstance(piece, Strong):
        return f"**{text}**"
    return f"`{text}`" if isinstance(piece, Code) else text


def _html(piece) -> str:
    if isinstance(piece, tuple):
        return "".join(map(_html, piece))
    text = escape(str(piece))
    if isinstance(piece, Strong):
        return f"<strong>{text}</strong>"
    return f"<code>{text}</code>" if isinstance(piece, Code) else text


def _md_row(cells) -> str:
    return "| " + " | ".join(map(_md, cells)) + " |"


def markdown(blocks) -> str:
    """The blocks as Markdown, a blank line between two blocks."""
    out = []
    for block in blocks:
        if isinstance(block, Table):
            out.append("\n".join([_md_row(block.header),
                                  "|" + "".join("---:|" if a == "r" else "---|"
                                                for a in block.align),
                                  *map(_md_row, block.rows)]))
        elif isinstance(block, Items):
            out.append("\n".join(f"- {_md(item)}" for item in block.items))
        else:
            out.append(_md(block.text))
    return "\n\n".join(out)


def to_html(blocks) -> str:
    """The blocks as HTML, one line per block."""
    out = []
    for block in blocks:
        if isinstance(block, Table):
            head = "".join(f"<th>{_html(c)}</th>" for c in block.header)
            body = "".join("<tr>" + "".join(f"<td>{_html(c)}</td>" for c in row) + "</tr>"
                           for row in block.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif isinstance(block, Items):
            out.append("<ul>" + "".join(f"<li>{_html(i)}</li>" for i in block.items) + "</ul>")
        else:
            out.append(f"<p>{_html(block.text)}</p>")
    return "\n".join(out)
