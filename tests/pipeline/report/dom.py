"""A small HTML tree for the report tests: parse a page, find elements, read their text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = frozenset({"meta", "br", "img", "link", "input", "hr", "col"})
_SVG_VOID = frozenset({"path", "rect", "use", "stop", "circle", "line", "polyline", "polygon"})


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str, css_class: str | None = None) -> list[Node]:
        return [
            n
            for n in self.iter()
            if n.tag == tag and (css_class is None or css_class in n.classes())
        ]

    def find(self, tag: str, css_class: str | None = None) -> Node:
        found = self.find_all(tag, css_class)
        assert found, f"no <{tag} class={css_class}>"
        return found[0]

    def text(self) -> str:
        """The text inside, tooltips (``<title>`` in SVG) left out."""
        parts = []
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif child.tag not in ("title", "style"):
                parts.append(child.text())
        return " ".join(p.strip() for p in parts if p.strip())

    def texts(self, tag: str) -> list[str]:
        return [n.text() for n in self.find_all(tag)]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return
        raise AssertionError(f"</{tag}> closes nothing open")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(text: str) -> Node:
    """The document's tree; every element must be closed (void elements aside)."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    open_tags = [n.tag for n in builder.stack[1:] if n.tag not in _SVG_VOID]
    assert not open_tags, f"unclosed: {open_tags}"
    return builder.root
