"""MediaWiki wikitext -> clean text, with links, citations and sections anchored in it.

:func:`clean_wikitext` is the hot loop of a Wikipedia build, so it avoids a full
parser: every stage is a compiled regex pass or a linear scan over the tokens a
regex found (``{{``/``}}``, ``[[``/``]]``, tags), never a Python loop over characters.

How positions survive the cleaning: every kept link and every citation is replaced
early by marker characters from the supplementary private-use planes (which are
removed from the input first).  Later stages only delete or rewrite markup around
them, and the last stage turns marker positions into offsets in the final text.

Conventions (DPR / WikiExtractor-like, plus what retrieval training needs):

* Removed with their content: comments, templates (nested, ``{{{param}}}``),
  tables (nested), File/Image and Category links, interlanguage links, magic words,
  ``<gallery> <math> <source> <syntaxhighlight> <timeline> <imagemap> <score> <pre>``
  and similar extension tags, ``<references>`` blocks.
* Unbalanced markup is treated like MediaWiki treats it, as literal text, except
  that the stray ``{{``, ``}}``, ``[[``, ``]]`` and ``|}`` themselves are deleted:
  an unclosed ``{{`` therefore never swallows the rest of the page.  An unclosed
  ``{|`` table runs until the first line that does not look like a table row.
  An unclosed ``<!--`` hides the rest of the page (as in MediaWiki).
* Templates leave text behind only when :mod:`pretriever.corpus.templates` has a renderer
  for them (``{{convert|52|mi|km}}`` -> "52 miles", ``{{lang|fr|mot}}`` -> "mot", dates,
  money, ...); every other template is dropped, and the punctuation it strands
  (``( ; , x)``, ``word , next``, ``()``) is tidied. A hole that tidying cannot see is
  left to :func:`pretriever.corpus.hygiene.has_hole`, which flags the sentence.
* The outermost ``{{Infobox ...}}`` templates' names and the ``[[Category:...]]`` links' names are kept
  aside (``CleanDocument.infoboxes``, ``categories``): the store's ``page_tags``, what a page is about.
* Headings are not part of the text; each starts a :class:`Section`.  The content
  of reference-like and bibliography-like sections ("References", "External links",
  "See also", "Notes", "Bibliography", "Selected works", "Discography", ...) is dropped,
  their links included; the sections themselves are kept (empty), their sub-headings
  are not recorded.
* List and indented lines (``* # : ;``) lose their markup and stay in the text, their
  offsets in ``CleanDocument.list_lines``: the segmenter leaves them out of passages
  unless the build keeps lists.
* ``<ref>`` tags, ``{{sfn}}``-style footnote templates standing in prose and
  ``{{r|name}}`` become :class:`Citation` objects placed right after the text they
  follow (before any whitespace), so the supported sentence ends at the position.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_left, bisect_right

from .model import Citation, CleanDocument, Link, Section
from .templates import Args, renderer_for
from .titles import Namespaces

__all__ = ["clean_wikitext"]

# --------------------------------------------------------------------------- markers

_REF_BASE = 0xF0000  # citation i  -> chr(_REF_BASE + i)
_REF_MAX = 0xFFFD
_LINK_BASE = 0x100000  # link i start -> chr(_LINK_BASE + i)
_LINK_MAX = 0xFFFC
_LINK_START = chr(_LINK_BASE)
_LINK_END = "\U0010fffd"
_MARK_RE = re.compile("[\U000f0000-\U0010ffff]")
_REF_MARKS = "\U000f0000-\U000fffff"
_ALNUM_RE = re.compile(r"[^\W_]")
_MARK_RUN_RE = re.compile("[\U000f0000-\U0010ffff][\U000f0000-\U0010ffff ]*")
# numeric character references big enough to decode into a marker character
_BIG_CHARREF_RE = re.compile(r"&#(?:0*[0-9]{6,}|[xX]0*[0-9a-fA-F]{5,});?")
_NO_SPACE_BEFORE = frozenset(",.;:!?)]}\n")
_REF_ONLY_RE = re.compile("[%s]" % _REF_MARKS)

# --------------------------------------------------------------------------- regexes

_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.S)

# Tags whose content is not ordinary wikitext; content handled by _extract_tags.
_DROP_CONTENT = frozenset(
    "pre math gallery source syntaxhighlight timeline imagemap score chem ce graph "
    "mapframe maplink templatedata hiero includeonly inputbox templatestyles "
    "categorytree indicator table".split()
)
_EXT_TAG_RE = re.compile(
    r"<(/?)(ref|references|nowiki|%s)(?=[\s/>])([^<>]*?)(/?)>" % "|".join(sorted(_DROP_CONTENT)),
    re.I,
)
_ATTR_RE = re.compile(r"""\b(name|group)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'/>]+))""", re.I)
_NOWIKI_ESCAPE = str.maketrans(
    {
        "[": "&#91;", "]": "&#93;", "{": "&#123;", "}": "&#125;", "|": "&#124;",
        "'": "&#39;", "<": "&lt;", ">": "&gt;", "=": "&#61;", "*": "&#42;",
        "#": "&#35;", ":": "&#58;", ";": "&#59;", "_": "&#95;", "!": "&#33;",
    }
)

_BRACE_RE = re.compile(r"\{\{+|\}\}+")
_TPL_NAME_RE = re.compile(r"\{\{\s*([^{}|<>\[\]\n]*)")
_DAB_RE = re.compile(
    r"\{\{\s*(?:template\s*:\s*)?(?:disambiguation|disambig|dab|disamb|hndis|geodis|numberdis|"
    r"letter[-_ ]numbercombdisambig|mathdab|[^{}|\n]*?[ _]+disambiguation)\s*(?:\||\}\})",
    re.I,
)  # or __DISAMBIG__ (a branch of its own would stop the regex engine from skipping to each "{{")
_SFN_NAMES = frozenset(
    {
        "sfn", "sfnp", "sfnm", "sfnmp", "harvnb", "harv", "harvp", "harvtxt", "harvcol",
        "harvcolnb", "harvcoltxt", "harvard citation", "harvard citation no brackets",
        "harvard citation text",
    }
)
_TABLE_RE = re.compile(r"^[ \t:]*(\{\||\|\})", re.M)
_TABLE_ROWS_RE = re.compile(r"(?:[^\n]*(?:\n|\Z))(?:[ \t]*[|!][^\n]*(?:\n|\Z))*")

_LINK_TOK_RE = re.compile(r"\[\[|\]\]")
_TARGET_RE = re.compile(r"[^|\[\]\n]*")
_BAD_TARGET_RE = re.compile(r"[\n{}<>\[\]]")
_TRAIL_RE = re.compile(r"[^\W\d_]+")
_SPACES_RE = re.compile(r"[\s_\u00a0]+")
_MEDIA_EXT_RE = re.compile(
    r"\.(?:jpe?g|png|gif|svg|tiff?|webp|xcf|bmp|ogg|ogv|oga|webm|mp3|mp4|wav|flac|mid|pdf|djvu|stl)\s*$",
    re.I,
)

_EXTLINK_RE = re.compile(
    r"\[((?:https?:|ftp:|ftps:|mailto:|news:|irc:|ircs:|gopher:|//)[^\s\[\]<>\"]{0,4000})"
    r"(?:[ \t]+([^\[\]\n]{0,2000}))?\]",  # a label stops at "[": unclosed "[http" stays linear
    re.I,
)
_MAGIC_RE = re.compile(r"__[A-Z]{2,}__")
_QUOTES_RE = re.compile(r"'{2,}")
_BR_RE = re.compile(r"<\s*/?\s*br\s*/?\s*>", re.I)
_INLINE_TAG_RE = re.compile(
    r"</?(?:abbr|b|bdi|bdo|big|cite|code|data|del|dfn|em|font|i|ins|kbd|mark|q|rb|rp|rt|rtc|"
    r"ruby|s|samp|small|span|strike|strong|sub|sup|time|tt|u|var|wbr|nowiki|onlyinclude|"
    r"noinclude|section|includeonly)\b[^<>]*>",
    re.I,
)
_BLOCK_TAG_RE = re.compile(
    r"</?(?:blockquote|caption|center|dd|div|dl|dt|h[1-6]|hr|li|ol|p|poem|references|tbody|"
    r"td|th|thead|tfoot|tr|ul|table)\b[^<>]*>",
    re.I,
)
# Punctuation left stranded where a template stood: "( ; , Phoibos", "Greek , i.e.", "( )".
# (citation markers inside are kept: "(<ref/>, from" -> "(<ref/>from")
# (the bracket first, then what precedes it: a pattern that starts with a lookbehind is tried at every position)
_EMPTY_PARENS_RE = re.compile("\\((?<!\\S\\()(?:[^\\S\\n]|[,;:%s])*\\)" % _REF_MARKS)  # "( ; , )", not "f()"
_PAREN_LEAD_RE = re.compile("\\((?=[ ,;:%s])[ ,;:%s]+" % (_REF_MARKS, _REF_MARKS))
_SPACE_PUNCT_RE = re.compile(r" ([,;)]|[.:](?=[ \n]|$))")  # spaces are folded already
_COMMAS_RE = re.compile(r",(?: ?,)+")
_WS_RE = re.compile(r"[^\S\n]+")
_ODD_WS_RE = re.compile(r"[^\S \n]")  # whitespace other than " " and "\n" (two passes beat one)
_SPACES2_RE = re.compile(r"  +")

# Sections whose body is bibliography or navigation rather than prose; dropped.
_NOISE_SECTIONS = frozenset(
    {
        "references", "reference", "external links", "see also", "notes", "note",
        "further reading", "bibliography", "sources", "footnotes", "citations",
        "works cited", "notes and references", "references and notes", "literature",
        "other websites", "external links and references", "references and further reading",
        "primary sources", "secondary sources", "notes and sources", "sources and further reading",
        # Bulgarian
        "източници", "бележки", "външни препратки", "вижте също", "литература",
        "библиография",
    }
)
# ... and lists of works: "Selected works", "Etymological bibliography", "Partial filmography as director"
_WORKS_SECTION_RE = re.compile(
    r"(?:[\w'-]+ ){0,2}(?:works|writings|publications|bibliography|bibliographies|discography|filmography|"
    r"videography)(?: as [\w ]+)?"
)


def _is_noise_section(title: str) -> bool:
    title = title.lower()
    return title in _NOISE_SECTIONS or _WORKS_SECTION_RE.fullmatch(title) is not None


# Citation parsing
_TPL_START_RE = re.compile(r"\{\{\s*([^{}|\n]*?)\s*(?=\||\}\})")
_PARAM_TOK_RE = re.compile(r"\{\{|\}\}|\[\[|\]\]|\|")
_EXT_IN_REF_RE = re.compile(r"\[((?:https?:)?//[^\s\[\]<>\"]+)[ \t]*([^\]\n]*)\]", re.I)
_BARE_URL_RE = re.compile(r"(?:https?:)?//[^\s<>\[\]{}|\"]+[^\s<>\[\]{}|\".,;:)]", re.I)
_SIMPLE_LINK_RE = re.compile(r"\[\[(?:[^|\[\]]*\|)?([^\[\]]*)\]\]")
_SIMPLE_TPL_RE = re.compile(r"\{\{[^{}]*\}\}")
_ANY_TAG_RE = re.compile(r"</?[a-zA-Z][^<>]*>")


# --------------------------------------------------------------------------- helpers


def _apply_edits(text: str, edits: list) -> str:
    """Apply non-nested ``(start, end, replacement)`` edits; edits inside an earlier one are skipped."""
    if not edits:
        return text
    edits.sort(key=lambda e: (e[0], -e[1]))
    out = []
    pos = 0
    for start, end, repl in edits:
        if start < pos:
            continue
        out.append(text[pos:start])
        if repl:
            out.append(repl)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _norm_name(name: str) -> str:
    name = _SPACES_RE.sub(" ", name).strip().lower()
    if name.startswith("template:"):
        name = name[9:].lstrip()
    return name


def _is_disambiguation(text: str) -> bool:
    return "__DISAMBIG__" in text or _DAB_RE.search(text) is not None


class _Refs:
    """Citations collected while cleaning: entries (name, group, content) plus named definitions."""

    __slots__ = ("entries", "defs")

    def __init__(self) -> None:
        self.entries: list[tuple[str | None, str | None, str]] = []
        self.defs: dict[tuple[str | None, str], str] = {}

    def add(self, name: str | None, group: str | None, content: str) -> str:
        if content.strip() and name:
            self.defs.setdefault((group, name), content)
            self.defs.setdefault((None, name), content)
        if not content.strip() and not name:
            return ""
        idx = len(self.entries)
        if idx >= _REF_MAX:
            return ""
        self.entries.append((name, group, content))
        return chr(_REF_BASE + idx)

    def content(self, idx: int) -> tuple[str | None, str]:
        name, group, content = self.entries[idx]
        if not content.strip() and name:
            content = self.defs.get((group, name)) or self.defs.get((None, name)) or ""
        return name, content


def _ref_attrs(attrs: str) -> tuple[str | None, str | None]:
    name = group = None
    if attrs:
        for m in _ATTR_RE.finditer(attrs):
            value = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4)
            value = html.unescape(value).strip() if value else ""
            if m.group(1).lower() == "name":
                name = value or None
            else:
                group = value or None
    return name, group


def _extract_tags(text: str, refs: _Refs) -> str:
    """Handle extension tags: refs -> markers, drop-content tags removed, nowiki escaped."""
    toks = list(_EXT_TAG_RE.finditer(text))
    if not toks:
        return text
    closers: dict[str, list[int]] = {}
    names = []
    for i, m in enumerate(toks):
        name = m.group(2).lower()
        names.append(name)
        if m.group(1):
            closers.setdefault(name, []).append(i)

    def find_close(name: str, i: int) -> int:
        lst = closers.get(name)
        if not lst:
            return -1
        k = bisect_right(lst, i)
        return lst[k] if k < len(lst) else -1

    out: list[str] = []
    pos = 0
    i = 0
    n = len(toks)
    refs_block_end = -1  # index of the token closing an open <references> block
    while i < n:
        m = toks[i]
        name = names[i]
        in_block = i < refs_block_end
        if not in_block:
            out.append(text[pos : m.start()])
        pos = m.end()
        if m.group(1):  # a closing tag; stray unless it closes <references>
            if i == refs_block_end:
                refs_block_end = -1
            i += 1
            continue
        selfclosing = bool(m.group(4))
        if name == "ref":
            rname, group = _ref_attrs(m.group(3))
            if selfclosing:
                content = ""
                i += 1
            else:
                j = find_close("ref", i)
                if j < 0:  # unclosed <ref>: drop the tag, keep what follows as text
                    i += 1
                    continue
                content = text[m.end() : toks[j].start()]
                pos = toks[j].end()
                i = j + 1
            marker = refs.add(rname, group, content)
            if not in_block and marker:
                out.append(marker)
            continue
        if selfclosing:
            i += 1
            continue
        j = find_close(name, i)
        if j < 0:
            i += 1
            continue
        if name == "references":
            refs_block_end = j
            i += 1
            continue
        if name == "nowiki" and not in_block:
            out.append(text[m.end() : toks[j].start()].translate(_NOWIKI_ESCAPE))
        pos = toks[j].end()
        i = j + 1
    out.append(text[pos:])
    return "".join(out)


def _split_params(body: str) -> list[str]:
    """Split a template body (text after ``{{``, up to its ``}}``) on top-level pipes."""
    parts = []
    depth = 0
    last = 0
    for m in _PARAM_TOK_RE.finditer(body):
        tok = m.group()
        if tok == "|":
            if depth == 0:
                parts.append(body[last : m.start()])
                last = m.end()
        elif tok[0] in "{[":
            depth += 1
        elif depth > 0:
            depth -= 1
    parts.append(body[last:])
    return parts


def _template_body(s: str, start: int) -> str:
    """The text of the template opening at ``s[start]`` (``{{``), without its braces."""
    depth = 0
    for m in _BRACE_RE.finditer(s, start):
        run = len(m.group())
        if m.group()[0] == "{":
            depth += run // 2
        else:
            depth -= run // 2
            if depth <= 0:
                return s[start + 2 : m.start()]
    return s[start + 2 :]


def _strip_inline(s: str) -> str:
    """Rough plain text of a short piece of wikitext (citation titles)."""
    if "{{" in s:
        for _ in range(3):
            s2 = _SIMPLE_TPL_RE.sub("", s)
            if s2 == s:
                break
            s = s2
    if "[[" in s:
        s = _SIMPLE_LINK_RE.sub(r"\1", s)
    if "[" in s:
        s = _EXTLINK_RE.sub(lambda m: m.group(2) or "", s)
    s = _QUOTES_RE.sub("", s)
    if "<" in s:
        s = _ANY_TAG_RE.sub("", s)
    if "&" in s:
        s = html.unescape(s)
    return _SPACES_RE.sub(" ", s).strip()


def _parse_citation(position: int, name: str | None, content: str) -> Citation:
    raw = content[:1000]
    for m in _TPL_START_RE.finditer(content):
        tname = _norm_name(m.group(1))
        if tname.startswith("cite") or tname == "citation" or tname.startswith("vcite"):
            params = {}
            for part in _split_params(_template_body(content, m.start()))[1:]:
                key, eq, value = part.partition("=")
                if eq:
                    params.setdefault(key.strip().lower(), value.strip())
            url = params.get("url") or params.get("chapter-url") or params.get("chapterurl") or None
            title = params.get("title") or params.get("chapter") or params.get("script-title")
            title = _strip_inline(title) if title else None
            archive = params.get("archive-url") or params.get("archiveurl") or None
            return Citation(position, tname, url or None, title or None, archive, name, raw)
        if tname in _SFN_NAMES:
            return Citation(position, "sfn", None, None, None, name, raw)
    m = _EXT_IN_REF_RE.search(content)
    if m:
        label = _strip_inline(m.group(2)) if m.group(2) else None
        return Citation(position, "bare url", m.group(1), label or None, None, name, raw)
    m = _BARE_URL_RE.search(content)
    if m:
        return Citation(position, "bare url", m.group(0), None, None, name, raw)
    return Citation(position, "text", None, None, None, name, raw)


# --------------------------------------------------------------------------- passes


def _strip_templates(text: str, refs: _Refs, infoboxes: list[str] | None = None) -> str:
    """Replace every ``{{...}}`` / ``{{{...}}}`` construct by what it shows (see :func:`_top_template`), mostly nothing;
    the names of the outermost ``{{Infobox ...}}`` templates go to ``infoboxes`` when given."""
    stack: list[list[int]] = []  # [position of the brace run, braces still open]
    ranges: list[list] = []  # merged [start, end, replacement]
    strays: list[list] = []
    for m in _BRACE_RE.finditer(text):
        p = m.start()
        n = m.end() - p
        if text[p] == "{":
            stack.append([p, n])
            continue
        q = p
        while n >= 2 and stack:
            top = stack[-1]
            use = 3 if (top[1] >= 3 and n >= 3) else 2
            top[1] -= use
            n -= use
            q += use
            if top[1] < 2:
                stack.pop()
                start = top[0]
            else:
                start = top[0] + top[1]
            while ranges and ranges[-1][0] >= start:
                ranges.pop()
            repl = None
            if not stack:
                repl = _top_template(text, start, q, refs, infoboxes)
            ranges.append([start, q, repl])
        if n:
            strays.append([q, q + n, None])
    for p, c in stack:
        strays.append([p, p + c, None])
    return _apply_edits(text, ranges + strays if strays else ranges)


def _top_template(text: str, start: int, end: int, refs: _Refs, infoboxes: list[str] | None = None) -> str | None:
    """What an outermost template leaves in the text: a citation marker, rendered words, or nothing (None).

    ``{{sfn|...}}`` in prose is a citation and ``{{r|a|b}}`` reuses named refs; a template
    with a renderer in :mod:`pretriever.corpus.templates` becomes its visible words, its
    arguments cleaned of nested templates first.
    """
    m = _TPL_NAME_RE.match(text, start)
    if not m:
        return None
    name = m.group(1)
    if not name or len(name) > 40:
        return None
    name = _norm_name(name)
    if infoboxes is not None and name.startswith("infobox"):
        infoboxes.append(name)
        return None
    if name in _SFN_NAMES:
        return refs.add(None, None, text[start:end]) or None
    if name == "r":
        body = text[start + 2 : end - 2]
        marks = []
        for part in _split_params(body)[1:]:
            part = part.strip()
            if part and "=" not in part:
                marks.append(refs.add(part, None, ""))
        return "".join(marks) or None
    render = renderer_for(name)
    if render is None:
        return None
    parts = _split_params(text[start + 2 : end - 2])[1:]
    parts = [_strip_templates(p, refs) if "{{" in p or "}}" in p else p for p in parts]
    try:
        return render(Args(parts)) or None
    except Exception:  # noqa: BLE001 - a renderer meeting input it did not foresee drops the template, not the page
        return None


def _strip_tables(text: str) -> str:
    edits = []
    depth = 0
    start = 0
    for m in _TABLE_RE.finditer(text):
        if m.group(1) == "{|":
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                edits.append((start, m.end(), None))
        else:  # stray |}
            edits.append((m.start(1), m.end(1), None))
    if depth:  # unclosed: the opening line and the table-looking lines after it
        rows = _TABLE_ROWS_RE.match(text, start)
        edits.append((start, rows.end(), None))
    return _apply_edits(text, edits)


def _pipe_trick(target: str) -> str:
    t = target.strip().lstrip(":")
    if ":" in t:
        t = t.split(":", 1)[1]
    if t.endswith(")") and " (" in t:
        t = t[: t.rindex(" (")]
    elif ", " in t:
        t = t[: t.index(", ")]
    return t.strip()


class _LinkMaker:
    """Classifies link targets (cached) and emits link markers."""

    __slots__ = ("namespaces", "cache", "targets", "dropped", "categories")

    def __init__(self, namespaces: Namespaces, dropped, categories: list[str]) -> None:
        self.namespaces = namespaces
        self.cache: dict[str, tuple[str, str, bool]] = {}
        self.targets: list[str] = []
        self.dropped = dropped
        self.categories = categories

    def note_category(self, title: str) -> None:
        """Keep the category a hidden ``[[Category:Name|sort key]]`` link puts the page in (once, in page order)."""
        prefix, _, name = title.partition(":")
        name = name.strip()
        if (name and self.namespaces.by_name.get(_SPACES_RE.sub(" ", prefix).strip().lower()) == 14
                and name not in self.categories):
            self.categories.append(name)

    def classify(self, target: str) -> tuple[str, str, bool]:
        """-> (kind, title, hidden); hidden links (file, category, interlanguage) vanish with their text."""
        hit = self.cache.get(target)
        if hit is not None:
            return hit
        kind, title = self.namespaces.classify(target)
        hidden = False
        stripped = target.strip()
        if kind == "namespace":
            if not stripped.startswith(":"):
                prefix = _SPACES_RE.sub(" ", html.unescape(stripped).split(":", 1)[0]).strip().lower()
                hidden = self.namespaces.by_name.get(prefix) in (6, 14)
        elif kind == "interlanguage":
            hidden = not stripped.startswith(":")
        elif kind == "article" and ":" in stripped and _MEDIA_EXT_RE.search(stripped):
            # a file link under a local alias that siteinfo does not list (bg "Картинка:")
            kind, hidden = "namespace", not stripped.startswith(":")
        if kind == "article" and not title:  # "[[:]]", "[[:#x]]"
            kind = "empty"
        hit = (kind, title, hidden)
        self.cache[target] = hit
        return hit


def _strip_links(text: str, maker: _LinkMaker) -> str:
    pairs = []
    strays = []
    stack: list[int] = []
    nested = set()
    for m in _LINK_TOK_RE.finditer(text):
        if m.group() == "[[":
            stack.append(m.start())
        elif stack:
            o = stack.pop()
            pairs.append((o, m.start()))
            if stack:
                nested.add(stack[-1])
        else:
            strays.append((m.start(), m.start() + 2, None))
    for p in stack:
        strays.append((p, p + 2, None))
    if not pairs:
        return _apply_edits(text, strays)
    pairs.sort()
    edits = strays
    dropped = maker.dropped
    skip_until = -1
    for o, c in pairs:
        if o < skip_until:
            continue
        if o in nested:
            tm = _TARGET_RE.match(text, o + 2)
            after = text[tm.end() : tm.end() + 1]
            if after == "|":
                kind, _title, hidden = maker.classify(tm.group())
                if hidden:
                    dropped[kind] += 1
                    edits.append((o, c + 2, None))
                    skip_until = c + 2
                    continue
                edits.append((o, tm.end() + 1, None))  # "[[target|" of a link around links
            else:
                edits.append((o, o + 2, None))
            edits.append((c, c + 2, None))
            continue
        inner = text[o + 2 : c]
        target, sep, anchor = inner.partition("|")
        if _BAD_TARGET_RE.search(target):  # not a link: keep the text, drop the brackets
            edits.append((o, o + 2, None))
            edits.append((c, c + 2, None))
            continue
        kind, title, hidden = maker.classify(target)
        end = c + 2
        if hidden:
            dropped[kind] += 1
            if kind == "namespace":
                maker.note_category(title)
            edits.append((o, end, None))
            continue
        if sep:
            if not anchor.strip():
                anchor = _pipe_trick(target)
        else:
            anchor = target.lstrip()
            if anchor.startswith(":"):
                anchor = anchor[1:]
        if "\n" in anchor:
            anchor = anchor.replace("\n", " ")
        anchor = anchor.strip()
        if kind == "article" or kind == "section":
            tm = _TRAIL_RE.match(text, end)
            if tm:
                trail = tm.group()
                if not trail.islower():
                    k = 0
                    while k < len(trail) and trail[k].islower():
                        k += 1
                    trail = trail[:k]
                if trail:
                    anchor += trail
                    end += len(trail)
        if kind != "article" or not anchor or len(maker.targets) >= _LINK_MAX:
            dropped[kind if kind != "article" else "empty"] += 1
            edits.append((o, end, anchor))
            continue
        idx = len(maker.targets)
        maker.targets.append(title)
        edits.append((o, end, chr(_LINK_BASE + idx) + anchor + _LINK_END))
    return _apply_edits(text, edits)


# --------------------------------------------------------------------------- main


def clean_wikitext(wikitext: str, namespaces: Namespaces) -> CleanDocument:
    """Turn one page's wikitext into clean text with links, citations and sections.

    Never raises: on an internal error the page degrades to a crude plain-text rendering.
    """
    try:
        return _clean(wikitext if isinstance(wikitext, str) else str(wikitext or ""), namespaces)
    except Exception:  # pragma: no cover - defensive: the function must be total
        return _crude(wikitext)


def _crude(wikitext) -> CleanDocument:
    try:
        text = _MARK_RE.sub("", str(wikitext or ""))
        text = _ANY_TAG_RE.sub(" ", text)
        text = re.sub(r"[\[\]{}|'=*#]+", " ", text)
        lines = (_WS_RE.sub(" ", line).strip() for line in text.split("\n"))
        text = "\n".join(line for line in lines if line)
    except Exception:
        text = ""
    return CleanDocument(text=text, sections=[Section(0, "")])


def _clean(text: str, namespaces: Namespaces) -> CleanDocument:
    if _MARK_RE.search(text):
        text = _MARK_RE.sub("", text)
    if "<!--" in text:
        text = _COMMENT_RE.sub("", text)
    is_dab = _is_disambiguation(text)
    refs = _Refs()
    doc = CleanDocument(text="", is_disambiguation=is_dab)
    if "<" in text:
        text = _extract_tags(text, refs)
    if "{{" in text or "}}" in text:
        text = _strip_templates(text, refs, doc.infoboxes)
    if "{|" in text or "|}" in text:
        text = _strip_tables(text)
    maker = _LinkMaker(namespaces, doc.dropped_links, doc.categories)
    if "[[" in text or "]]" in text:
        text = _strip_links(text, maker)
    if "[" in text:
        text = _EXTLINK_RE.sub(lambda m: m.group(2) or "", text)
    if "__" in text:
        text = _MAGIC_RE.sub("", text)
    if "''" in text:
        text = _QUOTES_RE.sub("", text)
    if "<" in text:
        text = _BR_RE.sub(" ", text)
        text = _INLINE_TAG_RE.sub("", text)
        text = _BLOCK_TAG_RE.sub(" ", text)
    if "&" in text:
        if "&#" in text:
            text = _BIG_CHARREF_RE.sub(_safe_charref, text)
        text = html.unescape(text)
    if "(" in text:
        text = _EMPTY_PARENS_RE.sub(_refs_only, text)
    text = _SPACES2_RE.sub(" ", _ODD_WS_RE.sub(" ", text))
    if "(" in text:
        text = _PAREN_LEAD_RE.sub(_paren_refs, text)
    if " " in text:
        text = _SPACE_PUNCT_RE.sub(r"\1", text)
    if ",," in text or ", ," in text:
        text = _COMMAS_RE.sub(",", text)
    if refs.entries or maker.targets:
        text = _fix_mark_runs(text)

    joined, section_marks, list_marks = _assemble_lines(text)
    _anchor(doc, joined, section_marks, list_marks, maker.targets, refs)
    return doc


def _refs_only(m: re.Match) -> str:
    """The citation markers of a match: what is left of an emptied "(...)"."""
    return "".join(_REF_ONLY_RE.findall(m.group()))


def _paren_refs(m: re.Match) -> str:
    return "(" + _refs_only(m)


def _safe_charref(m: re.Match) -> str:
    decoded = html.unescape(m.group())
    return "" if _MARK_RE.search(decoded) else decoded


def _trim_marks(s: str) -> str:
    """Drop spaces inside the marker runs at the edges of a line (markers themselves stay)."""
    n = len(s)
    i = 0
    while i < n and (s[i] == " " or s[i] >= "\U000f0000"):
        i += 1
    if i and " " in s[:i]:
        s = s[:i].replace(" ", "") + s[i:]
        n = len(s)
    j = n
    while j > 0 and (s[j - 1] == " " or s[j - 1] >= "\U000f0000"):
        j -= 1
    if j < n and " " in s[j:]:
        s = s[:j] + s[j:].replace(" ", "")
    return s


def _fix_mark_runs(text: str) -> str:
    """Normalise each run of markers and spaces: link ends and citations, one space, link starts.

    So a citation sits right after the text it follows (``bar.<ref/> Next`` and
    ``bar. <ref/> Next`` both anchor after "bar."), anchors never begin or end with a
    space, and removing the markers never leaves a double space behind.  Expects
    spaces already folded (a run is at most one space between markers).
    """
    out = []
    pos = 0
    for m in _MARK_RUN_RE.finditer(text):
        a, b = m.span()
        if a and text[a - 1] == " ":
            a -= 1
        elif " " not in m.group():
            continue
        ends = starts = ""
        for ch in text[a:b]:
            if ch == " ":
                continue
            if "\U00100000" <= ch < _LINK_END:
                starts += ch
            else:
                ends += ch
        nxt = text[b : b + 1]
        out.append(text[pos:a])
        out.append(ends + (" " if nxt and nxt not in _NO_SPACE_BEFORE else "") + starts)
        pos = b
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _assemble_lines(text: str) -> tuple[str, list[tuple[int, str]], list[tuple[int, int]]]:
    """Line pass: headings -> sections, list markup stripped, empty and noise lines dropped.

    Returns the joined lines, the sections' (start, title) and the (start, end) of every
    list or indented line (``* # : ;``), all as offsets in the joined text.
    """
    out: list[str] = []
    list_lines: list[int] = []  # indices in ``out``
    out_len = 0
    sections: list[tuple[int, str]] = [(0, "")]
    skip_level = 0
    pending = ""  # citations of marker-only lines, for the next line that has text
    after_heading = False
    for line in text.split("\n"):
        s = line.strip(" ")
        if not s:
            continue
        c = s[0]
        if c == "=":
            core = s
            if core[-1] != "=":  # markers (a ref after the heading) or spaces may trail it
                k = len(core)
                while k and (core[k - 1] == " " or core[k - 1] >= "\U000f0000"):
                    k -= 1
                core = core[:k]
            left = len(core) - len(core.lstrip("="))
            right = len(core) - len(core.rstrip("="))
            if right and left < len(core):
                level = min(left, right, 6)
                title = _MARK_RE.sub("", core[level : len(core) - level]).strip()
                if title:
                    if skip_level and level > skip_level:
                        continue
                    skip_level = level if _is_noise_section(title) else 0
                    sections.append((out_len + 1 if out else 0, title))
                    after_heading = True
                    continue
        if skip_level:
            continue
        is_list = c in "*#:;"
        if is_list:
            s = s.lstrip("*#:; ")
            if not s:
                continue
            c = s[0]
        if c == "|":
            continue
        if c == "-" and s.startswith("----"):
            s = s.lstrip("-").lstrip()
            if not s:
                continue
        if not _ALNUM_RE.search(s):  # nothing but markers and punctuation left
            refs_only = "".join(_REF_ONLY_RE.findall(s))
            if refs_only:
                if out and not after_heading:  # the paragraph these follow
                    out[-1] += refs_only
                    out_len += len(refs_only)
                else:
                    pending += refs_only
            continue
        if pending:
            s = pending + s
            pending = ""
        if s[0] >= "\U000f0000" or s[-1] >= "\U000f0000":
            s = _trim_marks(s)
        if out:
            out_len += 1
        if is_list:
            list_lines.append(len(out))
        out.append(s)
        after_heading = False
        out_len += len(s)
    spans = []
    if list_lines:
        starts = [0] * len(out)
        for i in range(1, len(out)):
            starts[i] = starts[i - 1] + len(out[i - 1]) + 1
        spans = [(starts[i], starts[i] + len(out[i])) for i in list_lines]
    return "\n".join(out), sections, spans


def _anchor(doc: CleanDocument, joined: str, section_marks, list_marks, targets: list[str], refs: _Refs) -> None:
    """Turn marker characters in ``joined`` into offsets of the final text."""
    cites: list[tuple[int, int]] = []
    links = doc.links
    positions = [m.start() for m in _MARK_RE.finditer(joined)]
    if not positions:
        text = joined
    else:
        open_links: list[tuple[int, str]] = []
        link_limit = chr(_LINK_BASE + len(targets))  # markers past these were never handed out
        ref_limit = chr(_REF_BASE + len(refs.entries))
        for removed, p in enumerate(positions):
            ch = joined[p]
            clean = p - removed
            if ch >= _LINK_START:
                if ch == _LINK_END:
                    if open_links:
                        start, opener = open_links.pop()
                        links.append(Link(start, clean, targets[ord(opener) - _LINK_BASE]))
                elif ch < link_limit:
                    open_links.append((clean, ch))
            elif ch < ref_limit:
                cites.append((clean, ord(ch) - _REF_BASE))
        text = _MARK_RE.sub("", joined)
    doc.text = text
    if links:
        kept = []
        for link in links:
            st, en = link.start, link.end
            while st < en and text[st] in " \n":
                st += 1
            while en > st and text[en - 1] in " \n":
                en -= 1
            if st < en:
                link.start, link.end = st, en
                kept.append(link)
            else:
                doc.dropped_links["empty"] += 1
        kept.sort(key=lambda lk: lk.start)
        doc.links = kept
    parsed: dict[tuple[str | None, str], Citation] = {}
    for pos, idx in cites:
        name, content = refs.content(idx)
        cit = parsed.get((name, content))
        if cit is None:
            cit = parsed[(name, content)] = _parse_citation(pos, name, content)
        else:  # a reused named ref: same source, new position
            cit = Citation(pos, cit.template, cit.url, cit.title, cit.archive_url, name, cit.raw)
        doc.citations.append(cit)
    n = len(text)
    sections = []
    for start, title in section_marks:
        if positions:
            start -= bisect_left(positions, start)
        sections.append(Section(min(start, n), title))
    doc.sections = sections
    if positions and list_marks:
        list_marks = [(a - bisect_left(positions, a), b - bisect_left(positions, b)) for a, b in list_marks]
    doc.list_lines = list_marks
