"""Templates that put visible words into an article, rendered as a reader sees them.

The cleaner (:mod:`pretriever.corpus.wikitext`) drops every template whose name is not
in :data:`RENDERERS`; a dropped ``{{convert|52|mi|km}}`` leaves a hole ("At, Alabama
has ..."). A renderer gets the template's arguments (nested templates already
rendered or dropped) and returns wikitext, which the later passes clean like any other
text, so ``{{lang|fr|[[mot]]}}`` still gives a link. We do not run MediaWiki: a
renderer gives the words a reader sees, not the exact typography, and what needs data
we do not have (unit conversion, inflation, today's date) is left out:

* ``{{convert|52|mi|km}}`` -> "52 miles" (``abbr=on``: "52 mi"; ``adj=on``: "52-mile";
  ranges: "10 to 20 km", "10–20 km"); the converted value in brackets is not computed.
* language and script: ``{{lang|fr|mot}}``, ``{{lang-fr|mot}}``, ``{{transl|ar|...}}``,
  ``{{nihongo|Aikido|合気道|Aikidō}}`` -> "Aikido (合気道, Aikidō)".
* formatting that only styles its text: ``nowrap``, ``nobr``, ``small``, ``sc``, ...
* dates: ``{{as of|2014}}`` -> "As of 2014", ``{{circa|1900}}`` -> "c. 1900",
  ``{{birth date|1990|5|3}}`` -> "May 3, 1990" (``df=y``: "3 May 1990"),
  ``{{death date and age|2000|1|2|1920|3|4}}`` -> "January 2, 2000 (aged 79)".
* money: ``{{US$|5}}`` -> "US$5", ``{{£|5}}``, ``{{€|5}}``, ``{{currency|5|GBP}}``.
* pronunciation guides (``{{IPAc-en}}``, ``{{IPA-fr}}``, ``{{respell}}``) are dropped
  on purpose, as WikiExtractor and DPR do: they sit in brackets after a name, and the
  cleaner tidies the brackets ("Aristotle (; Greek" -> "Aristotle (Greek"). ``{{IPA|/a/}}``
  itself is rendered: there the sound is what the sentence is about.

Adding a template is one line: ``RENDERERS["name"] = function`` (the name lower-case,
``_`` as a space, without ``Template:``), or a ``"prefix-"`` entry of :data:`PREFIXES`
for families such as ``lang-xx``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["Args", "RENDERERS", "PREFIXES", "renderer_for"]


class Args:
    """A template's arguments: positional ones (1-based, as in MediaWiki) and named ones (keys lower-case)."""

    __slots__ = ("pos", "named")

    _NAMED_RE = re.compile(r"\s*([\w -]{1,40}?)\s*=(.*)", re.S)

    def __init__(self, parts: list[str]) -> None:
        self.pos: list[str] = []
        self.named: dict[str, str] = {}
        for part in parts:
            m = self._NAMED_RE.match(part) if "=" in part else None
            if m:
                self.named[m.group(1).lower()] = m.group(2).strip()
            else:
                self.pos.append(part.strip())

    def get(self, i: int, default: str = "") -> str:
        """Positional argument ``i`` (1-based), or ``default`` when missing or blank."""
        return self.pos[i - 1] if len(self.pos) >= i and self.pos[i - 1] else default

    def opt(self, key: str) -> str:
        return self.named.get(key, "").lower()

    def on(self, key: str) -> bool:
        """A yes/no option such as ``abbr=on``, ``df=y``, ``lc=yes``."""
        return self.opt(key) in ("on", "y", "yes", "true", "1")

    def nonblank(self) -> list[str]:
        return [p for p in self.pos if p]


Renderer = Callable[[Args], str]

# --------------------------------------------------------------------------- simple shapes


def _first(a: Args) -> str:
    return a.get(1)


def _second(a: Args) -> str:
    return a.get(2)


def _last(a: Args) -> str:
    return a.pos[-1] if a.pos else ""


def _joined(a: Args) -> str:
    return "".join(a.pos)


def _text(value: str) -> Renderer:
    return lambda a: value


def _prefixed(prefix: str) -> Renderer:
    return lambda a: prefix + a.get(1) if a.get(1) else ""


def _separated(sep: str) -> Renderer:
    return lambda a: sep.join(a.nonblank())


def _wrapped(left: str, right: str) -> Renderer:
    return lambda a: left + a.get(1) + right if a.get(1) else ""


def _nihongo(a: Args) -> str:
    extra = ", ".join(p for p in (a.get(2), a.get(3)) if p)
    head = a.get(1)
    if head and extra:
        return f"{head} ({extra})"
    return head or extra


def _frac(a: Args) -> str:
    p = a.nonblank()
    if len(p) == 1:
        return "1/" + p[0]
    if len(p) == 2:
        return f"{p[0]}/{p[1]}"
    return f"{p[0]} {p[1]}/{p[2]}" if len(p) >= 3 else ""


def _val(a: Args) -> str:
    out = a.get(1)
    err = a.get(2)
    if err:
        out += err if err.startswith("(") else " ± " + err
    if a.named.get("e"):
        out += "×10^" + a.named["e"]
    unit = a.named.get("u") or a.named.get("ul")
    return f"{out} {unit}" if unit else out


def _ill(a: Args) -> str:
    """``{{ill|Article|de|Artikel}}``: a link to the English article, as shown."""
    target = a.get(1)
    label = a.named.get("lt") or a.get(1)
    return f"[[{target}|{label}]]" if target else ""


def _ship(a: Args) -> str:
    p = a.nonblank()
    if len(p) >= 3:
        return f"{p[0]} {p[1]} ({p[2]})"
    return " ".join(p)


def _ship_prefix(prefix: str) -> Renderer:
    return lambda a: _ship(Args([prefix, *a.pos]))


def _coord(a: Args) -> str:
    """``{{coord|40|26|N|79|58|W}}`` -> "40°26′N 79°58′W"; decimal ``{{coord|40.4|-79.9}}`` too."""
    if "title" in a.opt("display") and "inline" not in a.opt("display"):
        return ""
    p = [x for x in a.pos if x and "=" not in x and ":" not in x]
    out, part = [], []
    for x in p:
        if x.upper() in ("N", "S", "E", "W"):
            out.append("".join(v + s for v, s in zip(part, "°′″")) + x.upper())
            part = []
        elif len(part) < 3:
            part.append(x)
    if out:
        return " ".join(out)
    if len(p) >= 2:
        try:
            lat, lon = float(p[0]), float(p[1])
        except ValueError:
            return ""
        return f"{abs(lat):g}°{'N' if lat >= 0 else 'S'} {abs(lon):g}°{'E' if lon >= 0 else 'W'}"
    return ""


def _gauge(a: Args) -> str:
    """``{{RailGauge|1435mm}}`` -> "1435 mm"."""
    m = re.fullmatch(r"([\d.,]+)\s*(mm|m|in|ft)?", a.get(1))
    return f"{m.group(1)} {m.group(2) or 'mm'}" if m else a.get(1)


def _nuclide(a: Args) -> str:
    """``{{SimpleNuclide2|lithium|7}}`` -> "lithium-7"."""
    return f"{a.get(1)}-{a.get(2)}" if a.get(2) else a.get(1)


# --------------------------------------------------------------------------- dates

_MONTHS = ("January February March April May June July August September October November "
           "December").split()


def _int(value: str) -> int | None:
    value = value.strip().lstrip("0") or ("0" if value.strip() else "")
    return int(value) if value.isdigit() else None


def _date_from(parts: list[str], dmy: bool) -> str:
    """Year, month and day arguments -> "May 3, 1990" (``dmy``: "3 May 1990"), as far as they are given."""
    year = parts[0] if parts else ""
    month = _int(parts[1]) if len(parts) > 1 else None
    day = _int(parts[2]) if len(parts) > 2 else None
    if not year:
        return ""
    if not month or not 1 <= month <= 12:
        return year
    name = _MONTHS[month - 1]
    if not day:
        return f"{name} {year}"
    return f"{day} {name} {year}" if dmy else f"{name} {day}, {year}"


def _iso_date(value: str, dmy: bool) -> str:
    m = re.fullmatch(r"(\d{3,4})-(\d\d)(?:-(\d\d))?", value)
    return _date_from([g for g in m.groups() if g], dmy) if m else value


def _dmy(a: Args) -> bool:
    return a.on("df") or a.opt("df") in ("dmy",)


def _date(a: Args) -> str:
    """``{{birth date|1990|5|3}}``, ``{{start date|1990|5}}``, ``{{dts|1990}}``, ``{{date|1990-05-03}}``."""
    if len(a.nonblank()) == 1:
        return _iso_date(a.get(1), _dmy(a))
    return _date_from(a.pos[:3], _dmy(a))


def _age(birth: list[int | None], at: list[int | None]) -> int | None:
    if not (birth[0] and at[0]):
        return None
    years = at[0] - birth[0]
    if birth[1] and at[1] and (at[1], at[2] or 1) < (birth[1], birth[2] or 1):
        years -= 1
    return years


def _death_date_and_age(a: Args) -> str:
    """``{{death date and age|2000|1|2|1920|3|4}}`` -> "January 2, 2000 (aged 79)"."""
    when = _date_from(a.pos[:3], _dmy(a))
    died = [_int(x) for x in (a.pos + ["", "", ""])[:3]]
    born = [_int(x) for x in (a.pos[3:] + ["", "", ""])[:3]]
    age = _age(born, died)
    return f"{when} (aged {age})" if when and age is not None and age >= 0 else when


def _as_of(a: Args) -> str:
    """``{{as of|2014|5}}`` -> "As of May 2014"; ``lc=y`` lower-cases, ``alt=`` replaces the text."""
    if a.named.get("alt"):
        return a.named["alt"]
    when = _date_from(a.pos[:3], not a.opt("df").startswith("us"))
    if a.named.get("since"):
        return ("since " if a.on("lc") else "Since ") + when
    return ("as of " if a.on("lc") else "As of ") + when


def _circa(a: Args) -> str:
    first, second = a.get(1), a.get(2)
    if not first:
        return "c."
    return f"c. {first} – c. {second}" if second else f"c. {first}"


def _reign(a: Args) -> str:
    first, second = a.get(1), a.get(2)
    return f"r. {first}–{second}" if second else f"r. {first}" if first else "r."


def _marriage(a: Args) -> str:
    name, start, end = a.get(1), a.get(2), a.get(3)
    years = f"m. {start}" + (f"; {a.named.get('end', 'div.')} {end}" if end else "") if start else ""
    return f"{name} ({years})" if name and years else name


# --------------------------------------------------------------------------- money

_CURRENCIES = {"usd": "US$", "gbp": "£", "eur": "€", "jpy": "¥", "inr": "₹", "cny": "CN¥", "aud": "A$",
               "cad": "CA$", "chf": "CHF ", "rub": "₽", "krw": "₩"}


def _currency(a: Args) -> str:
    """``{{currency|5|GBP}}`` -> "£5" (the code as written when unknown: "5 XYZ")."""
    amount, code = a.get(1), a.get(2, "USD")
    symbol = _CURRENCIES.get(code.lower())
    return f"{symbol}{amount}" if symbol else f"{amount} {code}"


# --------------------------------------------------------------------------- convert

_NUMBER_RE = re.compile(r"[-−+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-−]?\d+)?(?:\+\d+/\d+)?$|\d+/\d+$")
# range separators of {{convert}} -> how they read
_RANGES = {"-": "–", "–": "–", "to": " to ", "to(-)": " to ", "and": " and ", "and(-)": " and ", "or": " or ",
           "by": " by ", "x": " × ", "×": " × ", "+/-": " ± ", "±": " ± ", "+": " + ", ",": ", ",
           ", and": ", and ", ", or": ", or ", "-to-": " to ", "to about": " to about "}
# {{convert}}'s unit codes (case matters: "ST" is a short ton, "st" a stone) -> (singular, plural, symbol);
# anything else is written as given
_UNITS: dict[str, tuple[str, str, str]] = {
    "km": ("kilometre", "kilometres", "km"), "m": ("metre", "metres", "m"), "cm": ("centimetre", "centimetres", "cm"),
    "mm": ("millimetre", "millimetres", "mm"), "mi": ("mile", "miles", "mi"), "ft": ("foot", "feet", "ft"),
    "in": ("inch", "inches", "in"), "yd": ("yard", "yards", "yd"), "nmi": ("nautical mile", "nautical miles", "nmi"),
    "smi": ("statute mile", "statute miles", "mi"), "fathom": ("fathom", "fathoms", "fathom"),
    "AU": ("astronomical unit", "astronomical units", "AU"), "ly": ("light-year", "light-years", "ly"),
    "km2": ("square kilometre", "square kilometres", "km²"), "m2": ("square metre", "square metres", "m²"),
    "sqmi": ("square mile", "square miles", "sq mi"), "sqft": ("square foot", "square feet", "sq ft"),
    "acre": ("acre", "acres", "acres"), "ha": ("hectare", "hectares", "ha"),
    "km3": ("cubic kilometre", "cubic kilometres", "km³"), "m3": ("cubic metre", "cubic metres", "m³"),
    "ft3": ("cubic foot", "cubic feet", "cu ft"), "cuft": ("cubic foot", "cubic feet", "cu ft"),
    "L": ("litre", "litres", "L"), "l": ("litre", "litres", "l"), "ml": ("millilitre", "millilitres", "ml"),
    "USgal": ("US gallon", "US gallons", "US gal"), "impgal": ("imperial gallon", "imperial gallons", "imp gal"),
    "oilbbl": ("barrel", "barrels", "bbl"), "kg": ("kilogram", "kilograms", "kg"), "g": ("gram", "grams", "g"),
    "t": ("tonne", "tonnes", "t"), "lb": ("pound", "pounds", "lb"), "oz": ("ounce", "ounces", "oz"),
    "st": ("stone", "stone", "st"), "LT": ("long ton", "long tons", "long tons"),
    "ST": ("short ton", "short tons", "short tons"), "carat": ("carat", "carats", "carats"),
    "C": ("degree Celsius", "degrees Celsius", "°C"), "°C": ("degree Celsius", "degrees Celsius", "°C"),
    "F": ("degree Fahrenheit", "degrees Fahrenheit", "°F"), "°F": ("degree Fahrenheit", "degrees Fahrenheit", "°F"),
    "K": ("kelvin", "kelvins", "K"), "m/s": ("metre per second", "metres per second", "m/s"),
    "km/h": ("kilometre per hour", "kilometres per hour", "km/h"), "mph": ("mile per hour", "miles per hour", "mph"),
    "ft/s": ("foot per second", "feet per second", "ft/s"), "kn": ("knot", "knots", "kn"),
    "W": ("watt", "watts", "W"), "kW": ("kilowatt", "kilowatts", "kW"), "MW": ("megawatt", "megawatts", "MW"),
    "hp": ("horsepower", "horsepower", "hp"), "PD/sqmi": ("per square mile", "per square mile", "/sq mi"),
    "PD/km2": ("per square kilometre", "per square kilometre", "/km²"),
}
# multiplier prefixes of {{convert}} unit codes: "e6acre", "Moilbbl", "koilbbl"
_MULTIPLIERS = {"e3": "thousand", "e6": "million", "e9": "billion", "e12": "trillion"}
_CASED_MULTIPLIERS = {"k": "thousand", "M": "million", "G": "billion", "T": "trillion"}


def _digits(value: str) -> str:
    """Thousands separated as {{convert}} shows them: "2381741" -> "2,381,741"."""
    m = re.fullmatch(r"([-−+]?)(\d{4,})(\.\d*)?", value)
    return f"{m.group(1)}{int(m.group(2)):,}{m.group(3) or ''}" if m else value


def _unit(code: str, value: str, a: Args) -> str:
    """``value`` with unit ``code``: "52 miles", "52 mi" (abbr=on), "52-mile" (adj=on)."""
    code = code.split()[0] if code.strip() else code  # "fathom ft": the input unit is the first word
    base, rate, per_day = code, "", ""
    if base.endswith("/d"):
        base, per_day = base[:-2], " per day"
    for prefix, word in _MULTIPLIERS.items():
        if base.startswith(prefix) and base[len(prefix):] in _UNITS:
            base, rate = base[len(prefix):], word
    if not rate and base[:1] in _CASED_MULTIPLIERS and base[1:] in ("oilbbl", "USgal", "cuft", "m3"):
        base, rate = base[1:], _CASED_MULTIPLIERS[base[:1]]
    change = base.endswith("-change")
    if change:
        base = base[: -len("-change")]
    names = _UNITS.get(base)
    if names is None:
        return f"{value} {code}"
    singular, plural, symbol = names
    if a.opt("sp") == "us":
        singular, plural = (s.replace("metre", "meter").replace("litre", "liter") for s in (singular, plural))
    if a.opt("abbr") in ("on", "in", "values", "y", "yes"):
        word = symbol
    else:
        word = singular if (a.on("adj") or value.strip("-−+") in ("1", "1.0")) and not rate else plural
    if rate:
        word = f"{rate} {word}"
    word += per_day
    if a.on("adj") and not rate:
        return f"{value}-{word}"
    if word.startswith(("°", "/", "′", "″")):
        return value + word
    return f"{value} {word}"


def _convert(a: Args) -> str:
    """``{{convert|52|mi|km}}`` -> "52 miles"; ranges and feet-and-inches too; see the module docstring."""
    p = a.pos
    if not p or not _NUMBER_RE.match(p[0]):
        return " ".join(x for x in p[:2] if x)
    value, i = _digits(p[0]), 1
    while i + 1 < len(p) and p[i].lower() in _RANGES and _NUMBER_RE.match(p[i + 1]):
        value += _RANGES[p[i].lower()] + _digits(p[i + 1])
        i += 2
    if i >= len(p):
        return value
    out = _unit(p[i], value, a)
    i += 1
    # compound input such as {{convert|5|ft|6|in|m}}: a number followed by another unit
    while i + 1 < len(p) and _NUMBER_RE.match(p[i]) and p[i + 1] and not _NUMBER_RE.match(p[i + 1]) \
            and i + 2 < len(p):
        out += " " + _unit(p[i + 1], p[i], a)
        i += 2
    return out


# --------------------------------------------------------------------------- the table

_DROP: Renderer = _text("")

RENDERERS: dict[str, Renderer] = {
    # measurements and numbers
    "convert": _convert, "cvt": _convert, "val": _val, "frac": _frac, "sfrac": _frac, "fraction": _frac,
    "e": lambda a: "×10^" + a.get(1), "chem": _joined, "chem2": _first, "simplenuclide2": _nuclide,
    "nuclide2": _nuclide, "railgauge": _gauge, "coord": _coord, "nts": _first, "ntsh": _first,
    # language and script
    "lang": _second, "langx": _second, "rtl-lang": _second, "script": _second, "native name": _second,
    "transl": _last, "translit": _last, "transliteration": _last, "nastaliq": _first, "nihongo": _nihongo,
    "linktext": _joined, "ill": _ill, "interlanguage link": _ill, "ipa": _first,
    "ipac-en": _DROP, "respell": _DROP, "audio": _DROP,
    # styling around words
    "nowrap": _first, "nobr": _first, "nobreak": _first, "small": _first, "smaller": _first, "larger": _first,
    "large": _first, "big": _first, "midsize": _first, "resize": _last, "sc": _first, "smallcaps": _first,
    "small caps": _first, "sup": _first, "sub": _first, "nobold": _first, "noitalic": _first, "mvar": _first,
    "math": _first, "var": _first, "mono": _first, "code": _first, "abbr": _first, "tooltip": _first,
    "vanchor": _first, "visible anchor": _first, "not a typo": _first, "proper name": _first, "sic": _joined,
    "vr": _first, "angbr": _wrapped("⟨", "⟩"), "keypress": _separated("+"), "gaps": _separated(" "),
    "flag": lambda a: a.named.get("name") or a.get(1), "flagcountry": _first, "flagu": _first,
    "hlist": _separated(" · "), "flatlist": _separated(" · "), "sortname": _separated(" "), "longitem": _first,
    "extinct": _text("†"),
    # dates and times
    "as of": _as_of, "circa": _circa, "c.": _circa, "ca.": _circa, "floruit": _prefixed("fl. "),
    "fl.": _prefixed("fl. "), "reign": _reign, "r.": _reign, "birth date": _date, "birth date and age": _date,
    "death date": _date, "start date": _date, "end date": _date, "start date and age": _date, "dts": _date,
    "date": _date, "film date": _date, "death date and age": _death_date_and_age, "marriage": _marriage,
    # money
    "us$": _prefixed("US$"), "usd": _prefixed("US$"), "£": _prefixed("£"), "gbp": _prefixed("£"),
    "€": _prefixed("€"), "eur": _prefixed("€"), "¥": _prefixed("¥"), "jpy": _prefixed("¥"), "₹": _prefixed("₹"),
    "inr": _prefixed("₹"), "currency": _currency, "format price": _first,
    # ships
    "ship": _ship, "uss": _ship_prefix("USS"), "hms": _ship_prefix("HMS"), "hmas": _ship_prefix("HMAS"),
    "hmcs": _ship_prefix("HMCS"), "ss": _ship_prefix("SS"), "rms": _ship_prefix("RMS"),
    # characters
    "nbsp": _text(" "), "thinsp": _text(" "), "spaces": _text(" "), "space": _text(" "), "ndash": _text("–"),
    "mdash": _text("—"), "snd": _text(" – "), "spnd": _text(" – "), "spaced ndash": _text(" – "),
    "mdashb": _text("—"), "·": _text(" · "), "dot": _text(" · "), "middot": _text(" · "), "•": _text(" • "),
    "bull": _text(" • "), "!": _text("|"), "pipe": _text("|"), "=": _text("="), "'": _text("'"),
    "'s": _text("'s"), "' \"": _text("'\""), "\" '": _text("\"'"), "\"'": _text("\"'"), "'\"": _text("'\""),
    "okina": _text("ʻ"),
}

# families by name prefix: {{lang-fr|mot}}, {{IPA-fr|...}} (pronunciation: dropped), {{IPAc-de|...}}
PREFIXES: dict[str, Renderer] = {"lang-": _first, "ipa-": _DROP, "ipac-": _DROP}


def renderer_for(name: str) -> Renderer | None:
    """The renderer of a normalised template name (lower-case, single spaces), or None (drop it)."""
    found = RENDERERS.get(name)
    if found is None and "-" in name:
        found = PREFIXES.get(name[: name.index("-") + 1])
    return found
