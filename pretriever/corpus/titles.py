"""Title normalisation and link-target classification, following MediaWiki's rules.

MediaWiki treats ``foo_bar``, ``Foo bar`` and ``Foo  bar`` as the same page (with
``first-letter`` case), so every title and link target goes through
:func:`normalise_title` before it is compared or joined.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

_SPACES = re.compile(r"[\s_\u00a0]+")

# Canonical English namespace names and the aliases MediaWiki accepts for them.
CANONICAL_NAMESPACES: dict[str, int] = {
    "media": -2, "special": -1, "talk": 1, "user": 2, "user talk": 3, "wikipedia": 4,
    "project": 4, "wp": 4, "wikipedia talk": 5, "project talk": 5, "wt": 5, "file": 6,
    "image": 6, "file talk": 7, "image talk": 7, "mediawiki": 8, "mediawiki talk": 9,
    "template": 10, "t": 10, "template talk": 11, "help": 12, "help talk": 13,
    "category": 14, "cat": 14, "category talk": 15, "portal": 100, "portal talk": 101,
    "book": 108, "book talk": 109, "draft": 118, "draft talk": 119, "timedtext": 710,
    "timedtext talk": 711, "module": 828, "module talk": 829,
}

# Interwiki prefixes of the Wikimedia projects (links to other wikis, not to articles).
INTERWIKI_PREFIXES = frozenset(
    "wikt wiktionary s wikisource q wikiquote b wikibooks n wikinews v wikiversity voy "
    "wikivoyage commons meta m species wikispecies mw mediawikiwiki d wikidata c foundation "
    "wmf w wikipedia incubator phab phabricator outreach doi google imdb".split()
)

# Language codes of Wikipedia editions; "xx:Title" with one of these is an interlanguage link.
LANGUAGE_CODES = frozenset(
    """aa ab ace ady af ak als alt am ami an ang ar arc ary arz as ast atj av avk awa ay az
    azb ba ban bar bat-smg bcl be be-tarask be-x-old bg bh bi bjn blk bm bn bo bpy br bs bug
    bxr ca cbk-zam cdo ce ceb ch cho chr chy ckb co cr crh cs csb cu cv cy da dag de din diq
    dsb dty dv dz ee el eml en eo es et eu ext fa fat ff fi fiu-vro fj fo fr frp frr fur fy
    ga gag gan gcr gd gl glk gn gom gor got gu guc gur guw gv ha hak haw he hi hif ho hr hsb
    ht hu hy hyw hz ia id ie ig ii ik ilo inh io is it iu ja jam jbo jv ka kaa kab kbd kbp
    kcg kg ki kj kk kl km kn ko koi kr krc ks ksh ku kv kw ky la lad lb lbe lez lfn lg li lij
    lld lmo ln lo lrc lt ltg lv mad mai map-bms mdf mg mh mhr mi min mk ml mn mni mnw mr mrj
    ms mt mus mwl my myv mzn na nah nap nds nds-nl ne new ng nia nl nn no nov nqo nrm nso nv
    ny oc olo om or os pa pag pam pap pcd pcm pdc pfl pi pih pl pms pnb pnt ps pt pwn qu rm
    rmy rn ro roa-rup roa-tara ru rue rw sa sah sat sc scn sco sd se sg sh shi shn si simple
    sk skr sl sm smn sn so sq sr srn ss st stq su sv sw szl szy ta tay tcy te tet tg th ti tk
    tl tn to tpi tr trv ts tt tum tw ty tyv udm ug uk ur uz ve vec vep vi vls vo wa war wo wuu
    xal xh xmf yi yo za zea zh zh-classical zh-min-nan zh-yue zu""".split()
)


def normalise_title(raw: str) -> str:
    """``foo_bar`` -> ``Foo bar``: underscores and runs of spaces folded, first letter upper-cased.

    Only the first character is upper-cased (MediaWiki's ``first-letter`` case), so
    ``iPod`` becomes ``IPod`` exactly as Wikipedia stores it.
    """
    title = _SPACES.sub(" ", raw).strip()
    return title[:1].upper() + title[1:]


@dataclass
class Namespaces:
    """The namespace names of one wiki (from its dump's ``<siteinfo>``) plus English aliases."""

    by_name: dict[str, int] = field(default_factory=lambda: dict(CANONICAL_NAMESPACES))

    def add(self, name: str, key: int) -> None:
        if name:
            self.by_name[_SPACES.sub(" ", name).strip().lower()] = key

    def classify(self, raw_target: str) -> tuple[str, str]:
        """Classify a ``[[link]]`` target.

        Returns ``(kind, title)`` where kind is ``article`` (title normalised, section
        anchor dropped), ``namespace``, ``interlanguage``, ``interwiki``, ``section``
        (a link to a section of the same page) or ``empty``.
        """
        target = html.unescape(raw_target)
        if "%" in target:
            target = unquote(target)
        target = target.split("#", 1)[0] if "#" in target else target
        target = _SPACES.sub(" ", target).strip()
        if not target:
            return ("section" if "#" in raw_target else "empty"), ""
        leading_colon = target.startswith(":")
        if leading_colon:
            target = target[1:].lstrip()
        if ":" in target:
            prefix, rest = target.split(":", 1)
            key = _SPACES.sub(" ", prefix).strip().lower()
            if key in self.by_name:
                return "namespace", normalise_title(target)
            if key in LANGUAGE_CODES:
                return "interlanguage", rest.strip()
            if key in INTERWIKI_PREFIXES:
                return "interwiki", rest.strip()
        return "article", normalise_title(target)
