"""Convert an HTML body to plain text for search and reading, in linear time and within a budget.

html.parser is not used: on malformed input (an unclosed comment, thousands of "<a" without
">") it rescans the rest of the document once per construct, which is quadratic. This
tokenizer finds each tag's end with one forward search and remembers when there is none.
"""

from __future__ import annotations

import html
import re

from mailbox.parsing.limits import Budget

_DEADLINE_EVERY_TOKENS = 2048
_RAW_TEXT = frozenset({"script", "style", "title", "textarea", "xmp"})  # content is not markup
_SKIPPED_RAW = frozenset({"script", "style", "title"})
_SKIPPED_NESTED = frozenset({"template", "svg", "xml", "object"})
# What may stand in <head>; any other tag (or text) starts the body, as in browsers.
_HEAD_CONTENT = frozenset(
    {
        "base", "basefont", "bgsound", "head", "html", "link", "meta", "noscript", "script",
        "style", "template", "title",
    }
)  # fmt: skip
_PARAGRAPH = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "table"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "body", "center", "dd", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "header", "hr", "html", "main", "nav", "ol",
        "pre", "section", "tr", "ul",
    }
)  # fmt: skip
_TAG_NAME = re.compile(r"(/?)([a-zA-Z][^\s/>]*)")
_SPACES = re.compile(r"[ \t\f\v\r\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_WHITESPACE = re.compile(r"\s+")


class _Extractor:
    """Walk the markup once, emitting visible text and line breaks for block elements."""

    def __init__(self, markup: str, max_chars: int, budget: Budget | None) -> None:
        self.markup = markup
        self.max_chars = max_chars
        self.budget = budget
        self.pieces: list[str] = []
        self.size = 0
        self.skipped: dict[str, int] = {}
        self.pre = 0
        self.next_gt = -1  # cached position of the next ">" (or -1 past the last one)
        self.no_more_gt = False
        self.in_body = False

    def emit(self, text: str) -> None:
        """Append text unless inside skipped content or past max_chars."""
        if self.size < self.max_chars and not any(self.skipped.values()):
            self.pieces.append(text)
            self.size += len(text)

    def find_gt(self, pos: int) -> int:
        """Return the position of the first ">" at or after pos, or -1; each ">" is searched once."""
        if self.no_more_gt:
            return -1
        if self.next_gt < pos:
            self.next_gt = self.markup.find(">", pos)
            if self.next_gt < 0:
                self.no_more_gt = True
        return self.next_gt

    def text(self, start: int, end: int) -> None:
        """Emit markup[start:end] as text: entities decoded, whitespace collapsed outside <pre>."""
        if self.skipped.get("head") and self.markup[start:end].strip():
            self.skipped.pop("head")  # stray text ends the head
        if start < end and not any(self.skipped.values()):
            data = html.unescape(self.markup[start:end])
            self.emit(data if self.pre else _WHITESPACE.sub(" ", data))

    def tag(self, name: str, closing: bool) -> None:
        """Track skipped regions and turn block-level tags into line breaks."""
        if name == "head":
            if closing or self.in_body:
                self.skipped.pop("head", None)
            else:
                self.skipped["head"] = 1
            return
        if not closing and name not in _HEAD_CONTENT:
            self.skipped.pop("head", None)  # an unclosed <head> must not hide the body
            self.in_body = True
        if name == "body":
            self.in_body = True
        if name in _SKIPPED_NESTED:
            count = self.skipped.get(name, 0) + (-1 if closing else 1)
            self.skipped[name] = max(0, count)
        elif name == "br":
            self.emit("\n")
        elif name == "li":
            if not closing:
                self.emit("\n- ")
        elif name in ("td", "th"):
            self.emit(" ")
        elif name in _PARAGRAPH:
            self.emit("\n\n")
        elif name in _BLOCK:
            self.emit("\n")
            if name == "pre":
                self.pre = max(0, self.pre + (-1 if closing else 1))

    def run(self) -> bool:
        """Extract text; return False when the deadline cut the work short."""
        markup = self.markup
        end = len(markup)
        pos = 0
        tokens = 0
        while pos < end and self.size < self.max_chars:
            tokens += 1
            if tokens % _DEADLINE_EVERY_TOKENS == 0 and self.budget is not None and self.budget.expired():
                return False
            lt = markup.find("<", pos)
            if lt < 0:
                self.text(pos, end)
                break
            self.text(pos, lt)
            pos = self.markup_at(lt)
        return True

    def markup_at(self, lt: int) -> int:
        """Consume the construct starting with "<" at lt; return where text resumes."""
        markup = self.markup
        if markup.startswith("<!--", lt):
            close = markup.find("-->", lt + 4)
            return len(markup) if close < 0 else close + 3
        match = _TAG_NAME.match(markup, lt + 1)
        if match is None and markup[lt + 1 : lt + 2] not in ("!", "?"):
            self.text(lt, lt + 1)  # a lone "<" is text
            return lt + 1
        gt = self.find_gt(lt + 1)
        if gt < 0:
            return len(markup)  # an unterminated tag swallows the rest, as browsers do
        if match is None:
            return gt + 1  # <!doctype>, <![if ...]>, <?xml ?>
        name = match.group(2).lower()
        closing = bool(match.group(1))
        self_closing = markup[gt - 1 : gt] == "/"
        self.tag(name, closing)
        if name in _RAW_TEXT and not closing and not self_closing:
            closing_tag = re.compile(r"</" + name + r"\b", re.I).search(markup, gt + 1)
            content_end = closing_tag.start() if closing_tag else len(markup)
            if name not in _SKIPPED_RAW:
                self.text(gt + 1, content_end)
            return content_end
        return gt + 1

    def result(self) -> str:
        """Return the collected text, tidied."""
        return tidy_text("".join(self.pieces))


def tidy_text(text: str) -> str:
    """Collapse runs of spaces, strip each line and keep at most one blank line in a row."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def html_to_text(markup: str, max_chars: int, budget: Budget | None = None) -> str:
    """Return the visible text of markup, at most max_chars characters.

    Edge cases: script, style, title, head, template and svg contents are dropped (a head
    ends, as in browsers, at the first tag or text that cannot stand in it); comments,
    doctype and conditional comments vanish; an unterminated tag or comment swallows the
    rest of the document; entities are decoded; the deadline is checked every few
    thousand tokens ("time-limit" returns the text so far); only the first 4 * max_chars
    characters of markup are read.
    """
    extractor = _Extractor(markup[: max_chars * 4], max_chars, budget)
    extractor.run()
    return extractor.result()[:max_chars]
