"""Answer comparison: when are two answers the same, and does a response state one?

Answer types (a task file's `answer.type`):
  number  integers and decimals modulo "1,000" / "1000.0" / trailing dots (GSM8K);
  text    case, whitespace and punctuation ignored (the embedded world's phrases);
  span    SQuAD style (TriviaQA, Natural Questions): case, articles and whitespace ignored,
          punctuation deleted ("D.C." = "DC", "Schindler's" = "Schindlers"); a hyphen or other
          mark read as a space also counts ("Guinea-Bissau" = "Guinea Bissau");
  math    LaTeX-aware: \\dfrac = \\frac, \\left/\\right, spacing, units, degrees, "x =",
          numeric equality of fractions and decimals, and else symbolic equivalence by
          math-verify (\\sqrt{18} = 3\\sqrt2, 1+x^2 = x^2+1) (MATH);
  choice  lettered options (closed tasks compare option texts as `text`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from fractions import Fraction

# A "-" is a sign only where it cannot be subtraction: not after a letter, digit or closing
# bracket ("5-3=2" states 5, 3 and 2; GSM8K's "<<20-16=4>>" states 16; "x = -3" states -3).
SIGN = r"(?:(?<![\w)\]}])-)?"
NUMBER = re.compile(SIGN + r"(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
ARTICLES = re.compile(r"\b(a|an|the)\b")
BOXED_COMMANDS = ("\\boxed", "\\fbox")


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """The text before the first stop string (all of it if none occurs)."""
    return text[: min((text.find(s) for s in stops if s in text), default=len(text))]


def normalize(text: str, answer_type: str) -> str:
    """The canonical form two answers of this type are compared in."""
    text = text.strip()
    if answer_type == "number":
        return _normalize_number(text)
    if answer_type == "math":
        return normalize_math(text)
    if answer_type == "span":  # SQuAD's normalize_answer: punctuation deleted, not spaced
        return " ".join(ARTICLES.sub(" ", re.sub(r"[^\w\s]", "", text.lower())).split())
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _normalize_number(text: str) -> str:
    cleaned = text.replace(",", "").rstrip(".")
    try:
        value = float(cleaned)
    except ValueError:
        return cleaned.lower()
    return str(int(value)) if value.is_integer() else repr(value)


def same_answer(a: str, b: str, answer_type: str) -> bool:
    """Are `a` and `b` the same answer? Math answers also compare by numeric value."""
    if answer_type == "math":
        left, right = normalize_math(a), normalize_math(b)
        if left == right:
            return bool(left)
        x, y = math_value(left), math_value(right)
        if x is not None and y is not None:
            return x == y
        return bool(left) and bool(right) and math_equivalent(a, b)
    wanted = normalize(b, answer_type)
    if answer_type == "span" and normalize(a, "text") and _spaced_span(a) == _spaced_span(b):
        return True  # "Guinea Bissau" for "Guinea-Bissau": the mark read as a space
    return bool(wanted) and normalize(a, answer_type) == wanted


def math_equivalent(answer: str, gold: str) -> bool:
    """Symbolic equivalence of two LaTeX answers by math-verify (the harness's math_verify):
    \\sqrt{18} = 3\\sqrt2, 1+x^2 = x^2+1, tuples and sets in any written form. Unparsable
    LaTeX (or math-verify's own time limit) is not equivalent."""
    from math_verify import parse, verify

    try:
        return bool(verify(gold=parse(f"${gold}$"), target=parse(f"${answer}$")))
    except Exception:  # math-verify raises on LaTeX it cannot read: not shown equal
        return False


def _spaced_span(text: str) -> str:
    """A span with punctuation read as spaces (the other reading of "Guinea-Bissau")."""
    return " ".join(ARTICLES.sub(" ", re.sub(r"[^\w\s]", " ", text.strip().lower())).split())


def mentions(response: str, gold: str, answer_type: str, question: str = "") -> bool:
    """Does the response state `gold` anywhere, whatever its format?

    Only whole words and numbers count ("Bissau" is not stated by "Guinea-Bissau", 16 not by
    160), and not an occurrence that is part of the response's echo of the question ("San
    Marino" in "the capital of San Marino is Borgo"): the gold with two neighbouring words of
    the response also appears in the question ("capital of San Marino"; one word, "of", is
    too common to tell an echo from "the City of San Marino").
    """
    if answer_type == "math":
        return _mentions_math(response, gold)
    if _mentions_words(_words(response, answer_type), _words(gold, answer_type), _words(question, answer_type)):
        return True
    if answer_type != "number" and "-" in gold:  # "Guinea-Bissau" also stated as "Guinea Bissau"
        spaced = [_words(text.replace("-", " "), answer_type) for text in (response, gold, question)]
        if _mentions_words(*spaced):
            return True
    if answer_type == "span":  # SQuAD: "Washington DC" states "Washington, D.C.", "US" states "U.S."
        deleted = [_words(_SPAN_MARKS.sub("", text), answer_type) for text in (response, gold, question)]
        return _mentions_words(*deleted)
    return False


_SPAN_MARKS = re.compile(r"[^\w\s-]")  # punctuation SQuAD deletes (the hyphen keeps its compound rule)


# Numbers stand alone ("2x12" states 2 and 12); in text, letters and digits make one word ("Kelmir2"
# is not "Kelmir") and a hyphenated compound is one word ("Guinea-Bissau" is not "Bissau").
_NUMBER_WORD = re.compile(SIGN + r"(?:\d[\d,]*(?:\.\d+)?|\.\d+)|[^\W\d_]+")
_TEXT_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def _words(text: str, answer_type: str) -> list[str]:
    """The words of `text` in the answer type's canonical form (numbers normalised, articles dropped)."""
    if answer_type == "number":
        return [_normalize_number(w) if NUMBER.fullmatch(w) else w for w in _NUMBER_WORD.findall(text.lower())]
    words = _TEXT_WORD.findall(text.lower())
    if answer_type == "span":
        words = [w for w in words if not ARTICLES.fullmatch(w)]
    return words


def _mentions_words(response: list[str], gold: list[str], question: list[str]) -> bool:
    n = len(gold)
    if not n:
        return False
    for i in range(len(response) - n + 1):
        if response[i : i + n] != gold:
            continue
        if not any(_contains(question, window) for window in _windows(response, i, n, ECHO_CONTEXT)):
            return True
    return False


ECHO_CONTEXT = 2  # words around a gold occurrence that, copied from the question with it, make it an echo


def _windows(words: list[str], i: int, n: int, extra: int) -> list[list[str]]:
    """The spans of `words` holding words[i:i+n] with `extra` more words around it (left, right or both)."""
    return [
        words[i - left : i + n + extra - left]
        for left in range(extra + 1)
        if i - left >= 0 and i + n + extra - left <= len(words)
    ]


def _contains(words: list[str], part: list[str]) -> bool:
    return any(words[i : i + len(part)] == part for i in range(len(words) - len(part) + 1))


# ---- LaTeX ---------------------------------------------------------------------------


def boxed_contents(text: str) -> list[str]:
    """Contents of every \\boxed{...} / \\fbox{...} (balanced braces) and \\boxed 5, in order."""
    found = []
    for command in BOXED_COMMANDS:
        start = 0
        while (at := text.find(command, start)) >= 0:
            start = at + len(command)
            rest = text[start:]
            if rest.startswith("{"):
                inner = _balanced(rest)
                if inner is not None:
                    found.append((at, inner))
            elif rest.startswith(" ") and rest.strip():
                found.append((at, rest.split()[0].rstrip("$.")))
    return [inner for _, inner in sorted(found)]


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{} in a worked solution: MATH's gold answer."""
    contents = boxed_contents(text)
    return contents[-1] if contents else None


def _balanced(text: str) -> str | None:
    """The content of the brace group `text` starts with, or None if it never closes."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return text[1:i]
    return None


UNIT_WORDS = (
    "degrees|degree|units|unit|cm|centimeters|meters|metres|m|km|inches|inch|feet|foot|ft|"
    "miles|mile|hours|hour|minutes|minute|seconds|second|sq|square|cents|cent|dollars|dollar|"
    "mph|pounds|pound|grams|gram|kg|liters|litres|ml|days|day|years|year|people|ways|students"
)
_TEXT_UNIT = re.compile(r"\\(?:text|textbf|mbox|mathrm)\{\s*(?:" + UNIT_WORDS + r")(?:\^?\{?\d\}?)?\s*\}")
_TEXT = re.compile(r"\\(?:text|textbf|mbox|mathrm)\{([^{}]*)\}")
_FRAC_SHORT = re.compile(r"\\frac(\d)(\d)")
_FRAC_HALF = re.compile(r"\\frac\{([^{}]+)\}(\d)")
_SQRT_SHORT = re.compile(r"\\sqrt(\w)")
_SIMPLE_SLASH = re.compile(r"^(-?\d+)/(\d+)$")
_LEADING_VARIABLE = re.compile(r"^[a-zA-Z]\w*(?:\([^()]*\))?=(?!=)")


def normalize_math(text: str, to_last_boxed: bool = True) -> str:
    """A canonical LaTeX string: the Hendrycks/Minerva normalisations, written for softeval.
    An answer is its last \\boxed{} when it has one (`to_last_boxed`)."""
    s = text.strip()
    boxed = last_boxed(s) if to_last_boxed else None
    if boxed is not None:
        s = boxed
    s = s.replace("\n", "").strip().strip("$").strip()
    s = s.rstrip(".").strip()
    s = re.sub(r"\\(?:left|right)(?=[^a-zA-Z])", "", s)
    s = re.sub(r"\\[,;:! ]|\\q?quad", "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    s = _TEXT_UNIT.sub("", s)
    s = _TEXT.sub(r"\1", s)
    s = re.sub(r"\s+(?:" + UNIT_WORDS + r")(?:\^?\d)?$", "", s)
    s = s.replace(" ", "")
    s = _LEADING_VARIABLE.sub("", s)
    s = _FRAC_SHORT.sub(r"\\frac{\1}{\2}", s)
    s = _FRAC_HALF.sub(r"\\frac{\1}{\2}", s)
    s = _SQRT_SHORT.sub(r"\\sqrt{\1}", s)
    if _SIMPLE_SLASH.match(s):
        s = _SIMPLE_SLASH.sub(r"\\frac{\1}{\2}", s)
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    if s.startswith("."):
        s = "0" + s
    if re.fullmatch(r"-?\d+\.\d*", s):
        s = s.rstrip("0").rstrip(".")
    return s


_FRAC_VALUE = re.compile(r"^(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}$")


def math_value(normalized: str) -> Fraction | None:
    """The exact value of a normalised answer that is a plain number or fraction."""
    try:
        if re.fullmatch(r"-?\d+(?:\.\d+)?", normalized):
            return Fraction(normalized)
        match = _FRAC_VALUE.match(normalized)
        if match and int(match.group(3)) != 0:
            value = Fraction(int(match.group(2)), int(match.group(3)))
            return -value if match.group(1) else value
    except (ValueError, ZeroDivisionError):
        return None
    return None


_SLASH_FRACTION = re.compile(SIGN + r"\d+/\d+(?![\d/])")


def _mentions_math(response: str, gold: str) -> bool:
    """Any boxed expression, $...$ span, number, plain fraction or the whole response equals the
    gold, or the gold's canonical form appears in the whole text (its boxes opened: an answer
    stated before the last box counts too)."""
    candidates = [*boxed_contents(response), *re.findall(r"\$([^$]+)\$", response), response]
    candidates += NUMBER.findall(response) + _SLASH_FRACTION.findall(response)
    if any(same_answer(c, gold, "math") for c in candidates):
        return True
    wanted = normalize_math(gold)
    compact = normalize_math(response.replace("$", " "), to_last_boxed=False)
    return len(wanted) > 1 and not re.fullmatch(r"-?\d+", wanted) and wanted in compact


# ---- degenerate responses ----------------------------------------------------------------

PUNCTUATION_ONLY = 4  # characters: "!!!!" is a run, "&" or "?!" may be an answer ("Which symbol ...?")
REPEATS = 8  # a unit repeated over the whole response this many times is a loop ("Tora! Tora! Tora!" is 3)
REPEATS_CUT = 3  # ... and this many when the response ran into its budget still repeating
RUN = 8  # one punctuation character this many times in a row ...
RUN_SHARE = 0.5  # ... filling at least this share of the response's characters
MAX_UNIT = 64  # longest repeated unit looked for at the end of a response cut at its budget


def degenerate(response: str, stop_reason: str | None = None, answered: bool = True) -> str | None:
    """Why `response` is degenerate, or None: a degenerate response is never formatted, whatever
    the task's pattern says (a phrase pattern accepts 32 colons; GSM8K's accepts "#### 5" eight
    times). `stop_reason` is the generation's ("eos", "stop" or "length": cut at its token budget;
    None: not known); `answered`: the task's extraction found an answer with a letter or digit in it.

    Degenerate, in the order checked (characters counted without whitespace; repeats compared with
    case and whitespace runs ignored, a unit counted whole or cut):
      1. cut at its budget (stop "length") before giving an answer (`answered` false);
      2. punctuation only: no letter or digit in any script, and at least PUNCTUATION_ONLY (4)
         characters, or any number when cut;
      3. one unit repeated over the whole response: at least REPEATS (8) times, or REPEATS_CUT (3)
         when cut ("the the the the the the the the", "aaaaaaaa", "#### 5\\n#### 5\\n...");
      4. a run of one punctuation character, at least RUN (8) long, filling at least RUN_SHARE
         (half) of the response ("Paris::::::::::::::::");
      5. cut at its budget while repeating one unit of up to MAX_UNIT (64) characters at least
         REPEATS (8) times ("... \\boxed{5}$$$$$$$$"); a unit of digits alone is a number, not a
         loop ("#### 100000000").
    Not degenerate: short answers ("Paris", "1984", "&", "B. Berlin"), names that repeat a word a
    few times ("Bora Bora", "Tora! Tora! Tora!"), any script (letters, digits and combining marks
    of every script count as letters: "हिन्दी", "ニューヨーク"), a worked solution cut after its answer.
    """
    text = " ".join(response.casefold().split())
    chars = text.replace(" ", "")
    if not chars:
        return None
    cut = stop_reason == "length"
    if cut and not answered:
        return "cut at its token budget (stop: length) before giving an answer"
    if not any(is_word_char(c) for c in chars) and (len(chars) >= PUNCTUATION_ONLY or cut):
        return f"punctuation only ({len(chars)} characters, no letter or digit)"
    period = _whole_period(text)
    repeats = -(-len(text) // period)
    if repeats >= (REPEATS_CUT if cut else REPEATS):
        return f"one unit repeated over the whole response: {_shown(text[:period])} {repeats} times"
    run, char = max((len(m.group()), m.group()[0]) for m in re.finditer(r"(.)\1*", chars))
    if run >= RUN and run >= RUN_SHARE * len(chars) and not is_word_char(char):
        return f"a run of {run} {char!r} fills {run / len(chars):.0%} of the response"
    if cut and (loop := _tail_loop(text)) is not None:
        unit, repeats = loop
        return f"ran on to its token budget repeating {_shown(unit)} {repeats} times"
    return None


def _shown(unit: str, most: int = 40) -> str:
    return repr(unit) if len(unit) <= most else f"{unit[:most]!r}... ({len(unit)} characters)"


def is_word_char(char: str) -> bool:
    """A letter, digit or combining mark of any script (Devanagari vowel signs are marks)."""
    return unicodedata.category(char)[0] in "LNM"


def _whole_period(text: str) -> int:
    """The shortest p with text[i] == text[i + p] throughout: `text` is text[:p] repeated, the
    last copy possibly cut (Knuth-Morris-Pratt: the length less the longest proper border)."""
    border = [0] * len(text)
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return len(text) - border[-1]


def _tail_loop(text: str) -> tuple[str, int] | None:
    """The shortest unit (not digits alone) that the end of `text` repeats at least REPEATS times."""
    n = len(text)
    for p in range(1, min(MAX_UNIT, n // REPEATS) + 1):
        i = n - p - 1
        while i >= 0 and text[i] == text[i + p]:
            i -= 1
        start = i + 1  # text[start:] has period p
        repeats = -(-(n - start) // p)
        unit = text[start : start + p]
        if repeats >= REPEATS and not unit.strip().isdigit():
            return unit, repeats
    return None
