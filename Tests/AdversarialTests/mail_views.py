#!/usr/bin/env python3
"""Reads mails every way a recipient's software may, and searches every reading
for secret words and span markers. Independent of mailsec: Python's `email`
(policy.default and the compat API), Python's codecs, html.unescape (the WHATWG
table), and lenient decoders written here.

    mail_views.py JOB.json  ->  JSON on stdout

JOB is a list of {"file": PATH, "tokens": [...], "scope": "all" | "headers"}
("headers": only the top-level header section, for letters). The answer is a
list of {"file", "views", "hits": [{"view", "found"}]}: `views` counts the
distinct readings searched, a hit names the reading and what it found (a
secret word, or "marker"). Readings whose name starts with "sniff" decode
bytes in a charset the part does not declare; they are reported as such.
"""
import base64
import binascii
import codecs
import email
import email.header
import email.utils
import html
import json
import quopri
import re
import sys
import urllib.parse
from email import policy

MARKERS = ("[[private]]", "[[/private]]")
# Invisible when rendered: soft hyphen, joiners, bidi controls and isolates,
# variation selectors, tag characters, Hangul fillers (default-ignorable, drawn as nothing).
INVISIBLE = dict.fromkeys([*map(ord, "\u00ad\u034f\u061c\u180e\u200b\u200c\u200d\u200e\u200f"
                                    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
                                    "\u2066\u2067\u2068\u2069\ufeff\u115f\u1160\u3164\uffa0"),
                           *range(0xFE00, 0xFE10), *range(0xE0000, 0xE0080)], None)


def _cp1047():
    # Python has no IBM1047; it is IBM037 with six bytes swapped (checked against glibc's iconv).
    table = list(bytes(range(256)).decode("cp037"))
    for a, b in ((0x5F, 0xB0), (0xAD, 0xBA), (0xBB, 0xBD)):
        table[a], table[b] = table[b], table[a]
    decoding = "".join(table)
    encoding = codecs.charmap_build(decoding)

    class Codec(codecs.Codec):
        def encode(self, text, errors="strict"):
            return codecs.charmap_encode(text, errors, encoding)

        def decode(self, data, errors="strict"):
            return codecs.charmap_decode(data, errors, decoding)

    return codecs.CodecInfo(name="cp1047", encode=Codec().encode, decode=Codec().decode)


ALIASES = {"csunicode11utf7": "utf-7", "ucs-4": "utf-32-be", "ucs4": "utf-32-be", "ucs-4be": "utf-32-be",
           "ucs-4le": "utf-32-le", "ibm1047": "cp1047", "ibm-1047": "cp1047", "1047": "cp1047", "cp1047": "cp1047"}
_CP1047 = _cp1047()
codecs.register(lambda name: _CP1047 if name in ("cp1047",) else None)

SNIFF = ("utf-8", "latin-1", "utf-7", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "cp037", "cp500",
         "cp273", "cp1047", "hz", "iso2022_jp", "gb18030", "shift_jis")


def codec(label):
    if not label:
        return None
    label = label.strip().strip('"').lower()
    label = ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


class Search:
    """Collects readings of one mail and searches each once."""

    def __init__(self, tokens):
        self.tokens = [t.lower() for t in tokens]
        self.seen = set()
        self.hits = []
        self.views = 0

    def text(self, view, text, depth=0):
        """A decoded reading: searched as it is and as every renderer may show it."""
        if not text:
            return
        bases = {"": text}
        unescaped = html.unescape(text)
        bases["html"] = unescaped
        bases["html twice"] = html.unescape(unescaped)  # srcdoc: a document inside an attribute
        bases["html-text"] = html.unescape(re.sub(r"<[^>]*>", "", text))
        bases["css"] = css_unescape(text)
        bases["html+css"] = css_unescape(unescaped)
        for base_name, base in bases.items():
            for render_name, rendered in renders(base):
                name = "/".join(x for x in (view, base_name, render_name) if x)
                self.search(name, rendered)
        if depth < 2:
            for index, (kind, data) in enumerate(data_urls(text) + data_urls(unescaped)):
                self.bytes_(f"{view}/data-url {index + 1} ({kind})", data, ["utf-8"], depth + 1)

    def bytes_(self, view, data, declared, depth=0):
        """Bytes: the declared charset, then every charset in the sniff list."""
        if not data:
            return
        charsets = [c for c in dict.fromkeys([bom_charset(data)] + [codec(d) for d in (declared or [])]) if c]
        for name in charsets:
            self.text(f"{view}/{name}", data.decode(name, "replace"), depth)
        for name in SNIFF:
            if name in charsets:
                continue
            try:
                decoded = data.decode(name, "replace")
            except Exception:
                continue
            self.text(f"sniff {name}: {view}", decoded, depth)

    def search(self, view, text):
        key = (view.split(": ", 1)[0].startswith("sniff"), text)
        if key in self.seen:
            return
        self.seen.add(key)
        self.views += 1
        lower = text.lower()
        letters = re.sub(r"[^a-z]", "", lower)
        for token in self.tokens:
            if token in lower or token in letters:
                self.hits.append({"view": view, "found": token})
        for marker in MARKERS:
            if marker in lower:
                self.hits.append({"view": view, "found": "marker"})


def bom_charset(data):
    """A byte order mark wins over the declared charset (WHATWG's decode)."""
    for bom, name in ((b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\xef\xbb\xbf", "utf-8-sig"),
                      (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le")):
        if data.startswith(bom):
            return name
    return None


def renders(text):
    """What a reader may render: invisible characters dropped, folded lines
    joined (iCalendar), soft breaks joined (format=flowed, DelSp=yes or no),
    text/enriched commands dropped."""
    visible = text.translate(INVISIBLE)
    yield "", text
    yield "visible", visible
    yield "unfolded", re.sub(r"\r?\n[ \t]", "", visible)
    yield "flowed-delsp", re.sub(r" \r?\n", "", visible)
    yield "flowed", re.sub(r" \r?\n", " ", visible)
    yield "flowed-quoted", re.sub(r" \r?\n", "", re.sub(r"(?m)^>+ ?", "", visible))
    yield "enriched", re.sub(r"<<|<[^<>]*>", lambda m: "<" if m.group(0) == "<<" else "", visible)


def css_unescape(text):
    def one(match):
        if match.group(1):
            value = int(match.group(1), 16)
            return chr(value) if 0 < value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"
        return match.group(2)
    return re.sub(r"\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\r\n\f])?|(.))", one, text)


def data_urls(text):
    found = []
    for match in re.finditer(r"data:([^,\"'\s>]*),([^\"'\s>)]*)", text, re.I):
        meta, payload = match.group(1), match.group(2)
        if ";base64" in meta.lower():
            found.append(("base64", lenient_base64(payload.encode("ascii", "replace"))))
        else:
            found.append(("percent", urllib.parse.unquote_to_bytes(payload)))
    return found


def lenient_base64(data):
    """What a lenient base64 reader gets: non-alphabet bytes skipped, '=' ignored."""
    clean = re.sub(rb"[^A-Za-z0-9+/]", b"", data)
    clean = clean[: len(clean) - len(clean) % 4 if len(clean) % 4 == 1 else len(clean)]
    try:
        return base64.b64decode(clean + b"=" * (-len(clean) % 4))
    except binascii.Error:
        return b""


def base64_readings(data):
    readings = [("base64 lenient", lenient_base64(data))]
    # A reader that stops at '=' and starts again after it.
    pieces = [p for p in re.split(rb"=+", data) if p.strip()]
    if len(pieces) > 1:
        readings.append(("base64 restarted at '='", b"".join(lenient_base64(p) for p in pieces)))
    try:
        readings.append(("base64 python", base64.b64decode(data, validate=False)))
    except binascii.Error:
        pass
    return readings


def qp_readings(data):
    readings = [("qp python", quopri.decodestring(data))]
    soft = re.sub(rb"=[ \t\r]*\n", b"", data)
    readings.append(("qp lenient", re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), soft)))
    return readings


def uu_reading(data):
    out = bytearray()
    inside = False
    for line in data.splitlines():
        if line.startswith(b"begin "):
            inside = True
            continue
        if line.strip() == b"end":
            inside = False
            continue
        if inside and line:
            try:
                out += binascii.a2b_uu(line)
            except binascii.Error:
                try:
                    out += binascii.a2b_uu(line[: ((line[0] - 32) & 63) * 4 // 3 + 5])
                except (binascii.Error, IndexError):
                    pass
    return [("uudecode", bytes(out))] if out else []


ENCODED_WORD = re.compile(r"=\?([^?\s]*)\?([^?\s]*)\?([^\s]*?)(?:\?=|$)")


def encoded_word_readings(raw):
    """Every way a lenient reader may decode encoded-words: each word's payload as
    base64 and as Q whatever its letter says, in its charset (or every sniffed one
    when that is empty or unknown), adjacent words joined."""
    words = list(ENCODED_WORD.finditer(raw))
    if not words:
        return []
    declared = [codec(m.group(1).split("*")[0]) for m in words]
    joined = re.sub(r"\?=\s+=\?", "?==?", raw)
    readings = []
    for interpretation in ("B", "Q"):
        def payload(match):
            data = match.group(3).encode("ascii", "replace")
            if interpretation == "B":
                return lenient_base64(data)
            return re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), data.replace(b"_", b" "))
        for charset in dict.fromkeys([d for d in declared if d] + list(SNIFF)):
            decoded = ENCODED_WORD.sub(lambda m: payload(m).decode(charset, "replace"), joined)
            prefix = "" if charset in declared else "sniff " + charset + ": "
            readings.append((f"{prefix}encoded-words as {interpretation} in {charset}", decoded))
    return readings


def raw_bytes(text):
    if isinstance(text, bytes):
        return text
    return text.encode("ascii", "surrogateescape") if all(ord(c) < 128 or 0xDC80 <= ord(c) <= 0xDCFF for c in text) \
        else text.encode("utf-8", "surrogateescape")


def header_views(search, message, place):
    for name, raw in message.raw_items():
        raw = str(raw)
        view = f"{place} {name}"
        search.bytes_(view + " raw", raw_bytes(raw), ["utf-8"])
        for reading_name, text in encoded_word_readings(raw):
            if reading_name.startswith("sniff"):
                search.text(reading_name.replace(": ", f": {view} ", 1), text)
            else:
                search.text(f"{view} {reading_name}", text)
        try:
            for index, (data, charset) in enumerate(email.header.decode_header(raw)):
                if isinstance(data, bytes):
                    search.bytes_(f"{view} decode_header {index}", data, [charset or "utf-8"])
        except Exception:
            pass
    for name in dict.fromkeys(k.lower() for k in message.keys()):
        try:
            values = message.get_all(name) or []
        except Exception:
            continue
        for index, value in enumerate(values):
            try:
                search.text(f"{place} {name} policy.default {index}", str(value))
                params = getattr(value, "params", None)
                if params:
                    for key, param in params.items():
                        search.text(f"{place} {name} policy.default param {key}", str(param))
            except Exception:
                pass
    for header in ("content-type", "content-disposition"):
        try:
            params = message.get_params(header=header, failobj=[]) or []
        except Exception:
            params = []
        for key, value in params:
            view = f"{place} {header} param {key}"
            if isinstance(value, tuple):
                charset, _, text = value
                search.bytes_(view + " (RFC 2231)", text.encode("latin-1", "surrogateescape"), [charset or "utf-8"])
                search.text(view + " collapsed", email.utils.collapse_rfc2231_value(value))
            else:
                search.text(view, value)
                for reading_name, text in encoded_word_readings(value):
                    search.text(f"{view} {reading_name}", text)
    for key, getter in (("filename", message.get_filename), ("name", lambda: message.get_param("name"))):
        try:
            value = getter()
        except Exception:
            continue
        if value is not None:
            search.text(f"{place} get {key}", email.utils.collapse_rfc2231_value(value))


def declared_charsets(message):
    charsets = []
    for value in message.get_all("content-type", []) or []:
        for match in re.finditer(r"charset\*?=\s*\"?([^\";\s]+)", str(value), re.I):
            charsets.append(match.group(1).split("'")[0])
    return charsets or ["utf-8"]


def body_views(search, message, place, depth):
    if message.is_multipart():
        for attribute in ("preamble", "epilogue"):
            text = getattr(message, attribute, None)
            if text:
                search.bytes_(f"{place} {attribute}", raw_bytes(text), ["utf-8"])
        return
    payload = message.get_payload(decode=False)
    if isinstance(payload, list):
        return
    raw = raw_bytes(payload or "")
    charsets = declared_charsets(message)
    readings = [("raw", raw)]
    try:
        readings.append(("python decode", message.get_payload(decode=True) or b""))
    except Exception:
        pass
    readings += base64_readings(raw) + qp_readings(raw) + uu_reading(raw)
    for name, data in readings:
        search.bytes_(f"{place} body {name}", data, charsets)
        # What may be a message inside (message/* a reader did not open, an attachment).
        if depth < 3 and re.match(rb"\s*[A-Za-z0-9-]+:", data) and b"\n\n" in data.replace(b"\r\n", b"\n"):
            try:
                inner = email.message_from_bytes(data.lstrip(), policy=policy.default)
            except Exception:
                continue
            message_views(search, inner, f"{place} body {name} as message", depth + 1)


def message_views(search, message, place, depth=0):
    for index, part in enumerate(message.walk()):
        part_place = f"{place} part {index}" if index else place
        header_views(search, part, part_place)
        body_views(search, part, part_place, depth)


def check(job):
    with open(job["file"], "rb") as handle:
        data = handle.read()
    search = Search(job["tokens"])
    message = email.message_from_bytes(data, policy=policy.default)
    if job.get("scope") == "headers":
        header_views(search, message, "top")
        end = re.search(rb"\r?\n\r?\n", data)
        search.bytes_("header section raw", data[: end.start() if end else len(data)], ["utf-8"])
    else:
        message_views(search, message, "top")
        search.bytes_("whole file raw", data, ["utf-8"])
    return {"file": job["file"], "views": search.views, "hits": search.hits}


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        jobs = json.load(handle)
    results = []
    for job in jobs:
        try:
            results.append(check(job))
        except Exception as error:  # a view that cannot be taken is no leak, but it is reported
            results.append({"file": job["file"], "views": 0, "hits": [], "error": f"{type(error).__name__}: {error}"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
