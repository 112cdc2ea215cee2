"""A small HTML tree for checking reports: parse a page (the file as written, or the
DOM a browser dumped) and find elements by id, class, tag or attribute."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)
    parent: Node | None = None

    @property
    def text(self) -> str:
        """All text inside, whitespace collapsed."""
        return " ".join("".join(self._texts()).split())

    def _texts(self) -> Iterator[str]:
        for child in self.children:
            if isinstance(child, str):
                yield child
            else:
                yield from child._texts()

    @property
    def raw_text(self) -> str:
        """The text inside as written (for a script element: its source)."""
        return "".join(self._texts())

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, test: Callable[[Node], bool]) -> list[Node]:
        return [node for node in self.iter() if test(node)]

    def by_id(self, element_id: str) -> Node:
        found = self.find_all(lambda n: n.attrs.get("id") == element_id)
        assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
        return found[0]

    def by_class(self, name: str) -> list[Node]:
        return self.find_all(lambda n: name in n.classes())

    def by_tag(self, tag: str) -> list[Node]:
        return self.find_all(lambda n: n.tag == tag)

    @property
    def hidden(self) -> bool:
        return "hidden" in self.attrs


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), parent=self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), parent=self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
