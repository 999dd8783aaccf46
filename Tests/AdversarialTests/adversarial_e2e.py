#!/usr/bin/env python3
"""Issue 21's adversarial run: hostile mails of every class in hostile_classes.py
through the built `mailsec` (redact; encrypt to Bob, who has a key, and Dora,
who has none; the pipe filter with a sendmail stand-in; encrypt with the
partially encrypted extension, published to a `mailsec serve` of its own), and
every postcard and published document read as recipients read them:

- Python's email, policy.default: every header's decoded value, every
  parameter and file name, every part's get_content();
- headless Chromium (one session for the run): each HTML part, HTML or SVG
  attachment, srcdoc and data: document, iCalendar X-ALT-DESC, rendered Markdown
  and the published reading page, read as body.innerText, textContent, every
  attribute value and the CSS-generated content of every element;
- a terminal (pyte) showing each text part: backspace overstrike, ANSI/ECMA-48;
- what a viewer of the file makes of it: JSON, RTF, vCard 2.1, iCalendar,
  text/enriched, XML (expat), zip/docx/odt/gzip/PDF, .eml, inline uuencode, yEnc
  and BinHex, OpenPGP literal/compressed/signed (gpg), S/MIME signed-data (openssl);
- the lenient readings of mail_views.py (its "sniff" readings excepted).

The rule for every mail: each command exits 65 (69 also for signed mail) with
one line on stderr, or no secret word and no marker is in any reading of any
postcard or published document. A control (the same shape, no marker) must come
out (exit 0). Exits 1 when any mail leaks or breaks the rule.
"""
import argparse
import base64
import binascii
import email
import gzip
import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
import zlib
from email import policy
from xml.etree import ElementTree

sys.dont_write_bytecode = True  # no __pycache__ in the test target's folder
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import hostile_classes  # noqa: E402
import mail_views  # noqa: E402

MARKERS = ("[[private]]", "[[/private]]")
CONTROLS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), *range(0x7F, 0xA0)], None)
COMMANDS = ("redact", "encrypt", "filter", "published")


# --------------------------------------------------------------------------- search
class Readings:
    """The readings of one postcard or document: (view, text) pairs, and the HTML documents still to render."""

    def __init__(self):
        self.texts = []
        self.documents = []  # (view, bytes, mime, charset)

    def add(self, view, text):
        if text:
            self.texts.append((view, text if isinstance(text, str) else str(text)))


def search(texts, tokens):
    hits = []
    for view, text in texts:
        lower = text.lower()
        letters = re.sub(r"[^a-z]", "", lower)
        for token in tokens:
            if token in lower or token in letters:
                hits.append((view, token))
        clean = lower.translate(CONTROLS).translate(mail_views.INVISIBLE)
        for marker in MARKERS:
            if marker in lower or marker in clean:
                hits.append((view, "marker"))
    return hits


# --------------------------------------------------------------------------- viewers of files
def terminal_view(text, columns=200):
    import pyte
    lines = text.count("\n") + 2
    screen = pyte.Screen(columns, min(max(lines, 4), 2000))
    screen.set_mode(pyte.modes.LNM)  # a terminal driver turns LF into CR LF
    stream = pyte.Stream(screen)
    stream.feed(text)
    return "\n".join(line.rstrip() for line in screen.display)


def enriched_view(text):
    text = re.sub(r"(?is)<param>.*?</param>", "", text)
    text = re.sub(r"<<|<[^<>]*>", lambda m: "<" if m.group(0) == "<<" else "", text)
    return re.sub(r"\n(\n*)", lambda m: m.group(1) if m.group(1) else " ", text)


def rtf_view(text):
    out, skip_stack, uc = [], [False], 1
    i, skipping_uc = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            skip_stack.append(skip_stack[-1])
            i += 1
        elif ch == "}":
            if len(skip_stack) > 1:
                skip_stack.pop()
            i += 1
        elif ch == "\\":
            m = re.match(r"\\([a-z]+)(-?\d+)? ?|\\'([0-9a-fA-F]{2})|\\(.)", text[i:], re.S)
            if not m:
                i += 1
                continue
            i += len(m.group(0))
            if m.group(3):
                if skipping_uc:
                    skipping_uc -= 1
                elif not skip_stack[-1]:
                    out.append(bytes([int(m.group(3), 16)]).decode("cp1252", "replace"))
            elif m.group(4):
                if m.group(4) == "*":
                    skip_stack[-1] = True
                elif not skip_stack[-1]:
                    out.append(m.group(4) if m.group(4) in "\\{}" else "")
            else:
                word, number = m.group(1), m.group(2)
                if word == "u" and number is not None:
                    if not skip_stack[-1]:
                        out.append(chr(int(number) % 65536))
                    skipping_uc = uc
                elif word == "uc" and number is not None:
                    uc = int(number)
                elif word in ("par", "line"):
                    out.append("\n")
                elif word in ("fonttbl", "colortbl", "stylesheet", "info", "pict"):
                    skip_stack[-1] = True
        else:
            if skipping_uc:
                skipping_uc -= 1
            elif not skip_stack[-1] and ch not in "\r\n":
                out.append(ch)
            i += 1
    return "".join(out)


def unfold(text):
    return re.sub(r"\r?\n[ \t]", "", text)


def directory_views(text, readings, place, depth):
    """vCard and iCalendar as their viewers show them: unfolded, quoted-printable
    and base64 values decoded, escapes undone, HTML descriptions rendered."""
    raw = text.replace("\r\n", "\n")
    # vCard 2.1: a quoted-printable value goes on after a soft break '=' at the line's end.
    lines = []
    for line in unfold(raw).split("\n"):
        if lines and re.search(r"ENCODING=QUOTED-PRINTABLE", lines[-1], re.I) and lines[-1].endswith("="):
            lines[-1] = lines[-1][:-1] + line
        else:
            lines.append(line)
    for line in lines:
        name, _, value = line.partition(":")
        params = name.split(";")[1:]
        upper = name.upper()
        if "QUOTED-PRINTABLE" in upper:
            charset = next((p.split("=", 1)[1] for p in params if p.upper().startswith("CHARSET=")), "utf-8")
            data = re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), value.encode("latin-1", "replace"))
            value = data.decode(mail_views.codec(charset) or "utf-8", "replace")
        elif "ENCODING=B" in upper:
            data = mail_views.lenient_base64(value.encode("ascii", "replace"))
            readings.add(f"{place} {name.split(';')[0]} base64", data.decode("utf-8", "replace"))
            read_file(readings, f"{place} {name.split(';')[0]} attached", data, "", "", depth + 1)
        value = re.sub(r"\\([nN,;\\:])", lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)
        readings.add(f"{place} {name.split(';')[0]} value", value)
        for param in params:
            readings.add(f"{place} {name.split(';')[0]} param", re.sub(r"\^(['n^])", lambda m: {"'": "\"", "n": "\n", "^": "^"}[m.group(1)], param))
        if "FMTTYPE=TEXT/HTML" in upper:
            readings.documents.append((f"{place} {name.split(';')[0]} html", value.encode("utf-8"), "text/html", "utf-8"))


def json_view(text):
    try:
        strings = []

        def walk(value):
            if isinstance(value, str):
                strings.append(value)
            elif isinstance(value, dict):
                for key, item in value.items():
                    strings.append(key)
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
        walk(json.loads(text))
        return "\n".join(strings)
    except Exception:
        return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text).replace("\\/", "/")


def xml_view(data):
    try:
        root = ElementTree.fromstring(data)
    except Exception:
        return ""
    parts = []
    for element in root.iter():
        parts.append(element.text or "")
        parts += list(element.attrib.values())
        parts.append(element.tail or "")
    return "".join(parts) + "\n" + " ".join(parts)


def yenc_decode(text):
    out = bytearray()
    for block in re.finditer(r"(?ms)^=ybegin [^\n]*\n(.*?)^=yend", text):
        escaped = False
        for ch in block.group(1).encode("latin-1", "replace"):
            if ch in (10, 13):
                continue
            if escaped:
                out.append((ch - 64 - 42) % 256)
                escaped = False
            elif ch == 61:
                escaped = True
            else:
                out.append((ch - 42) % 256)
    return bytes(out)


def binhex_decode(text):
    alphabet = "!\"#$%&'()*+,-012345689@ABCDEFGHIJKLMNPQRSTUVXYZ[`abcdefhijklmpqr"
    out = bytearray()
    for block in re.finditer(r"\(This file must be converted with BinHex[^)]*\)\s*:([^:]*):", text):
        bits, count = 0, 0
        raw = bytearray()
        for ch in block.group(1):
            if ch in "\r\n\t ":
                continue
            index = alphabet.find(ch)
            if index < 0:
                continue
            bits = (bits << 6) | index
            count += 6
            if count >= 8:
                count -= 8
                raw.append((bits >> count) & 255)
        # run-length: 0x90 n repeats the previous byte n times (n=0: a literal 0x90)
        data, i = bytearray(), 0
        while i < len(raw):
            if raw[i] == 0x90 and i + 1 < len(raw):
                if raw[i + 1] == 0:
                    data.append(0x90)
                elif data:
                    data += bytes([data[-1]]) * (raw[i + 1] - 1)
                i += 2
            else:
                data.append(raw[i])
                i += 1
        if data:
            n = data[0]
            start = 1 + n + 1 + 4 + 4 + 2
            length = int.from_bytes(data[start:start + 4], "big")
            fork = start + 4 + 4 + 2
            out += data[fork:fork + length]
    return bytes(out)


def pdf_view(data):
    texts = []
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        stream = match.group(1)
        for candidate in (stream,):
            try:
                stream = zlib.decompress(candidate)
            except zlib.error:
                pass
        texts.append(stream.decode("latin-1"))
        texts.append("".join(m.decode("latin-1") for m in re.findall(rb"\(((?:\\.|[^\\)])*)\)", stream)))
    return "\n".join(texts)


class Tools:
    gnupg = None

    @classmethod
    def gpg_unpack(cls, armored):
        if cls.gnupg is None:
            cls.gnupg = tempfile.mkdtemp(prefix="ms-advread-")
        result = subprocess.run(["gpg", "--homedir", cls.gnupg, "--batch", "--no-tty", "--decrypt"], input=armored,
                                capture_output=True, timeout=30)
        return result.stdout

    @staticmethod
    def cms_unpack(der):
        for form in ("DER", "PEM", "SMIME"):
            result = subprocess.run(["openssl", "cms", "-verify", "-noverify", "-inform", form], input=der, capture_output=True, timeout=30)
            if result.stdout:
                return result.stdout
        return b""

    @classmethod
    def close(cls):
        if cls.gnupg:
            subprocess.run(["gpgconf", "--homedir", cls.gnupg, "--kill", "all"], capture_output=True)
            shutil.rmtree(cls.gnupg, ignore_errors=True)


def bytes_to_text(data, charset=""):
    bom = mail_views.bom_charset(data)
    name = bom or mail_views.codec(charset) or "utf-8"
    try:
        return data.decode(name, "replace")
    except Exception:
        return data.decode("utf-8", "replace")


def kind_of(ctype, name):
    # As a file system saves it: trailing dots and blanks gone (Windows), invisible characters unseen.
    name = (name or "").lower().translate(mail_views.INVISIBLE).rstrip(". ")
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    table = {"html": "html", "htm": "html", "xhtml": "xhtml", "svg": "svg", "eml": "eml", "ics": "calendar", "vcf": "vcard",
             "vcard": "vcard", "json": "json", "jsonld": "json", "rtf": "rtf", "md": "markdown", "zip": "zip", "docx": "zip",
             "odt": "zip", "xlsx": "zip", "gz": "gzip", "pdf": "pdf", "asc": "pgp", "gpg": "pgp", "pgp": "pgp", "p7m": "cms",
             "p7s": "cms", "xml": "xml", "txt": "text", "csv": "csv"}
    by_type = {"text/html": "html", "application/xhtml+xml": "xhtml", "image/svg+xml": "svg", "message/rfc822": "eml",
               "message/global": "eml", "text/calendar": "calendar", "application/ics": "calendar", "text/vcard": "vcard",
               "text/x-vcard": "vcard", "text/directory": "vcard", "application/json": "json", "text/json": "json",
               "application/ld+json": "json", "application/rtf": "rtf", "text/rtf": "rtf", "text/markdown": "markdown",
               "text/enriched": "enriched", "text/richtext": "enriched", "application/zip": "zip", "application/gzip": "gzip",
               "application/x-gzip": "gzip", "application/pdf": "pdf", "application/pgp-encrypted": "pgp",
               "application/pgp-signature": "pgp", "application/pkcs7-mime": "cms", "application/x-pkcs7-mime": "cms",
               "application/pkcs7-signature": "cms", "application/xml": "xml", "text/xml": "xml", "text/csv": "csv",
               "text/tab-separated-values": "csv", "text/x-markdown": "markdown", "text/x-vcalendar": "calendar",
               "text/troff": "troff"}
    if ctype in by_type:
        return by_type[ctype]
    if ctype.startswith("application/vnd.openxmlformats") or ctype.startswith("application/vnd.oasis.opendocument"):
        return "zip"
    return table.get(ext, "text" if ctype.startswith("text/") else "binary")


def text_views(readings, place, text, kind, depth):
    """A decoded text: as it is, without controls, in a terminal, and as its viewer shows it."""
    readings.add(place, text)
    readings.add(place + " (controls dropped)", text.translate(CONTROLS))
    if kind not in ("html", "xhtml", "svg"):
        try:
            readings.add(place + " terminal", terminal_view(text))
        except Exception as error:
            readings.add(place + " terminal failed", "")
            print(f"adversarial-e2e: terminal view failed: {type(error).__name__}", file=sys.stderr)
    if kind == "enriched":
        readings.add(place + " enriched", enriched_view(text))
    elif kind == "markdown":
        import markdown
        readings.documents.append((place + " markdown", markdown.markdown(text).encode("utf-8"), "text/html", "utf-8"))
    elif kind in ("calendar", "vcard"):
        directory_views(text, readings, place, depth)
    elif kind == "json":
        readings.add(place + " json", json_view(text))
    elif kind == "rtf":
        readings.add(place + " rtf", rtf_view(text))
    elif kind == "csv":
        # A spreadsheet evaluates formulas: the strings a CONCATENATE joins.
        readings.add(place + " csv", re.sub(r'(?i)=?CONCATENATE\(((?:"[^"]*",?)*)\)',
                                            lambda m: "".join(re.findall(r'"([^"]*)"', m.group(1))), text))
    elif kind == "troff":
        readings.add(place + " troff", text.replace("\\(lB", "[").replace("\\(rB", "]"))
    # Blocks a reader's software decodes inside any text.
    for match in re.finditer(r"-----BEGIN PGP (?:SIGNED )?MESSAGE-----.*?-----END PGP (?:MESSAGE|SIGNATURE)-----", text, re.S):
        unpacked = Tools.gpg_unpack(match.group(0).encode())
        if unpacked and depth < 4:
            read_file(readings, place + " gpg", unpacked, "", "text/plain", depth + 1)
    if "begin " in text:
        for name, data in mail_views.uu_reading(text.encode("latin-1", "replace")):
            readings.add(place + " " + name, bytes_to_text(data))
    if "=ybegin" in text:
        readings.add(place + " yEnc", bytes_to_text(yenc_decode(text)))
    if "BinHex" in text:
        readings.add(place + " BinHex", bytes_to_text(binhex_decode(text)))


def read_file(readings, place, data, name, ctype, depth, charset=""):
    """Bytes of a part or a file, read as the software for its kind reads them."""
    if depth > 5 or not data:
        return
    kind = kind_of(ctype, name)
    if kind in ("html", "xhtml", "svg"):
        mime = {"html": "text/html", "xhtml": "application/xhtml+xml", "svg": "image/svg+xml"}[kind]
        readings.documents.append((place + " rendered", data, mime, charset or ("utf-8" if kind != "html" else "")))
        if kind != "html":
            readings.add(place + " xml", xml_view(data))
    if kind == "eml":
        try:
            message_views(readings, parse(data), place + " message", depth + 1)
        except Exception:
            pass
    elif kind == "zip":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist()[:50]:
                    member = archive.read(info)[:5_000_000]
                    readings.add(f"{place} zip name", info.filename)
                    if info.filename.endswith(".xml"):
                        readings.add(f"{place} zip {info.filename} xml", xml_view(member))
                    read_file(readings, f"{place} zip {info.filename}", member, info.filename, "", depth + 1)
        except Exception:
            pass
    elif kind == "gzip":
        try:
            inner = gzip.decompress(data)
            read_file(readings, place + " gunzip", inner, name[:-3] if name.lower().endswith(".gz") else "", "", depth + 1)
        except Exception:
            pass
    elif kind == "pdf":
        readings.add(place + " pdf streams", pdf_view(data))
    elif kind == "pgp" and (b"-----BEGIN PGP" in data or data[:1] and data[0] & 0x80):
        unpacked = Tools.gpg_unpack(data)
        if unpacked:
            read_file(readings, place + " gpg", unpacked, "", "text/plain", depth + 1)
    elif kind == "cms":
        unpacked = Tools.cms_unpack(data)
        if unpacked:
            read_file(readings, place + " cms content", unpacked, "", "message/rfc822", depth + 1)
    elif kind == "xml":
        readings.add(place + " xml", xml_view(data))
    if kind not in ("zip", "gzip", "pdf", "cms", "eml"):
        text_views(readings, place, bytes_to_text(data, charset), kind, depth)


class ReaderMessage(email.message.EmailMessage):
    """A message/* part in base64 or quoted-printable is decoded before it is read
    as a message, as mail readers do; Python's parser would read the encoded text."""

    def get_content_maintype(self):
        maintype = super().get_content_maintype()
        if maintype == "message" and str(self.get("content-transfer-encoding", "")).strip().lower() in ("base64", "quoted-printable"):
            return "x-encoded-message"
        return maintype


READER_POLICY = policy.default.clone(message_factory=ReaderMessage)


def parse(data):
    return email.message_from_bytes(data, policy=READER_POLICY)


def message_views(readings, message, place, depth=0, headers_only=False):
    for index, part in enumerate(message.walk()):
        where = f"{place} part {index}"
        for name in dict.fromkeys(k.lower() for k in part.keys()):
            try:
                for value in part.get_all(name) or []:
                    readings.add(f"{where} {name}", str(value))
                    for key, param in (getattr(value, "params", None) or {}).items():
                        readings.add(f"{where} {name} param {key}", str(param))
            except Exception as error:
                readings.add(f"{where} {name} (undecodable: {type(error).__name__})", "")
        if headers_only:
            return
        try:
            filename = part.get_filename()
        except Exception:
            filename = None
        readings.add(f"{where} filename", filename)
        if part.is_multipart():
            readings.add(f"{where} preamble", part.preamble)
            readings.add(f"{where} epilogue", part.epilogue)
            continue
        ctype = part.get_content_type()
        try:
            content = part.get_content()
        except Exception:
            content = None
        decoded = part.get_payload(decode=True) or b""
        if ctype.startswith("message/") and not isinstance(content, email.message.Message):
            read_file(readings, where, decoded, filename or "", "message/rfc822", depth + 1)
            continue
        if isinstance(content, str):
            readings.add(f"{where} get_content", content)
            if str(part.get_param("format", "")).lower() == "flowed":
                # RFC 3676 as a flowed reader shows it: soft breaks joined, space-stuffing undone, DelSp honoured.
                delsp = str(part.get_param("delsp", "")).lower() == "yes"
                unstuffed = re.sub(r"(?m)^ ", "", content)
                readings.add(f"{where} flowed", re.sub(r" \r?\n", "" if delsp else " ", unstuffed))
            kind = kind_of(ctype, filename)
            if kind in ("html", "xhtml", "svg"):
                read_file(readings, where, decoded, filename or "", ctype, depth, part.get_content_charset() or "")
            text_views(readings, f"{where} get_content", content, kind, depth)
        else:
            read_file(readings, where, decoded, filename or "", ctype, depth, part.get_content_charset() or "")


def read_copy(path, scope):
    readings = Readings()
    with open(path, "rb") as handle:
        data = handle.read()
    message = parse(data)
    message_views(readings, message, "email", headers_only=scope == "headers")
    return readings, data


# --------------------------------------------------------------------------- the browser
BROWSER_JS = r"""
const out = [];
function walk(doc, tag, depth) {
  if (!doc || depth > 4) return;
  if (doc.body) out.push([tag + 'innerText', doc.body.innerText || '']);
  if (doc.documentElement) {
    out.push([tag + 'textContent', doc.documentElement.textContent || '']);
    if (doc.documentElement.innerText !== undefined) out.push([tag + 'root innerText', doc.documentElement.innerText || '']);
  }
  out.push([tag + 'title', doc.title || '']);
  const view = doc.defaultView;
  for (const el of doc.querySelectorAll('*')) {
    for (const a of el.attributes) out.push([tag + 'attr ' + a.name, a.value]);
    if (view) {
      for (const p of ['::before', '::after', '::marker']) {
        const c = view.getComputedStyle(el, p).content;
        if (c && c !== 'none' && c !== 'normal') out.push([tag + 'css ' + p, c]);
      }
      const l = view.getComputedStyle(el).listStyleType;
      if (l && l.startsWith('"')) out.push([tag + 'css list-style-type', l]);
    }
    if (el.shadowRoot) walk({body: el.shadowRoot, documentElement: el.shadowRoot, querySelectorAll: s => el.shadowRoot.querySelectorAll(s), defaultView: view}, tag + 'shadow ', depth + 1);
  }
  for (const f of doc.querySelectorAll('iframe, frame, object, embed')) {
    let d = null;
    try { d = f.contentDocument || (f.getSVGDocument && f.getSVGDocument()); } catch (e) {}
    if (d) walk(d, tag + 'frame ', depth + 1);
  }
}
walk(document, '', 0);
return out;
"""


class Browser:
    def __init__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        options = Options()
        options.binary_location = "/usr/bin/chromium"
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--blink-settings=imagesEnabled=false"]:
            options.add_argument(flag)
        options.set_capability("unhandledPromptBehavior", "accept")
        options.page_load_strategy = "normal"
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_page_load_timeout(20)
        self.driver.set_script_timeout(20)
        self.pages = 0

    def read(self, url, wait_ready=False):
        self.pages += 1
        try:
            self.driver.get(url)
            if wait_ready:
                from selenium.webdriver.support.ui import WebDriverWait
                WebDriverWait(self.driver, 20).until(
                    lambda d: d.execute_script("return document.body && document.body.getAttribute('data-ready')") == "1")
            return [(view, text) for view, text in self.driver.execute_script(BROWSER_JS) if text]
        except Exception as error:
            return [("browser error " + type(error).__name__, "")]

    def close(self):
        try:
            self.driver.quit()
        except Exception:
            pass


def render_all(browser, documents, cache):
    """Renders every document, then every srcdoc and data: document found in them, three levels deep."""
    results = {}
    level = list(documents)
    for depth in range(4):
        found = []
        for view, data, mime, charset in level:
            key = hashlib.sha256(mime.encode() + b"\0" + charset.encode() + b"\0" + data).hexdigest()
            if key not in cache:
                url = f"data:{mime}{';charset=' + charset if charset else ''};base64," + base64.b64encode(data).decode()
                cache[key] = browser.read(url) if browser else []
            texts = [(f"{view} chromium {v}", t) for v, t in cache[key]]
            # What a reader without a browser engine shows: the tags dropped, references decoded.
            source_text = bytes_to_text(data, charset)
            texts.append((f"{view} tags dropped", html.unescape(re.sub(r"<[^>]*>", "", source_text))))
            results.setdefault(view, []).extend(texts)
            if depth < 3:
                source = data.decode("utf-8", "replace")
                for v, t in texts + [(view, source), (view, html.unescape(source))]:
                    if " attr srcdoc" in v:
                        found.append((f"{view} srcdoc", t.encode("utf-8"), "text/html", "utf-8"))
                    for m in re.finditer(r"data:([^,;\"'\s>]*)((?:;[^,;\"'\s>]*)*),([^\"'\s>)]*)", t, re.I):
                        mime_type, params, payload = m.group(1).lower() or "text/plain", m.group(2).lower(), m.group(3)
                        inner = (mail_views.lenient_base64(payload.encode("ascii", "replace")) if ";base64" in params
                                 else __import__("urllib.parse").parse.unquote_to_bytes(payload))
                        cs = re.search(r"charset=([^;]+)", params)
                        if mime_type in ("text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml"):
                            found.append((f"{view} data-url", inner, mime_type, cs.group(1) if cs else ""))
                        results.setdefault(view, []).append((f"{view} data-url bytes", bytes_to_text(inner, cs.group(1) if cs else "")))
        level = list({(v, d, m, c): None for v, d, m, c in found}.keys())
        if not level:
            break
    return results


# --------------------------------------------------------------------------- running mailsec
class Harness:
    def __init__(self, mailsec, work):
        self.mailsec, self.work = mailsec, work
        self.gnupg = os.path.join(work, "gnupg")
        os.mkdir(self.gnupg, 0o700)
        with open(os.path.join(self.gnupg, "gpg-agent.conf"), "w") as f:
            f.write("allow-loopback-pinentry\n")
        with open(os.path.join(self.gnupg, "gpg.conf"), "w") as f:
            f.write("pinentry-mode loopback\n")
        self.env = dict(os.environ, GNUPGHOME=self.gnupg, XDG_DATA_HOME=os.path.join(work, "data"))
        self.env.pop("DISPLAY", None)
        for key in ("alice.sec.asc", "bob.pub.asc"):
            subprocess.run(["gpg", "--batch", "--yes", "--import", os.path.join(ROOT, "Fixtures", "keys", key)], env=self.env,
                           capture_output=True, check=True)
        # The MTA's re-injection command: it only takes the bytes and the recipients and files them.
        self.outbox = os.path.join(work, "outbox")
        os.mkdir(self.outbox, 0o700)
        self.sendmail = os.path.join(work, "sendmail")
        with open(self.sendmail, "w") as f:
            f.write(f"#!/bin/sh\ntmp=$(mktemp '{self.outbox}/in.XXXXXX')\ncat > \"$tmp\"\nprintf '%s\\n' \"$*\" > \"$tmp.args\"\nmv \"$tmp\" \"$tmp.eml\"\n")
        os.chmod(self.sendmail, 0o700)
        self.filter_config = os.path.join(work, "filter.toml")
        with open(self.filter_config, "w") as f:
            f.write(f"gnupg_home = \"{self.gnupg}\"\nlog = \"none\"\n[reinject]\nmethod = \"sendmail\"\nsendmail = [\"{self.sendmail}\"]\n"
                    f"[journal]\ndirectory = \"{os.path.join(work, 'journal')}\"\n")
        # A reading server of this run's own (port 0: any free port).
        self.token = os.path.join(work, "token")
        with open(self.token, "w") as f:
            f.write(base64.b64encode(os.urandom(24)).decode() + "\n")
        self.server_out = open(os.path.join(work, "serve.out"), "w")
        self.server = subprocess.Popen([mailsec, "serve", "--port", "0", "--store", os.path.join(work, "store.sqlite"), "--token-file", self.token],
                                       stdout=self.server_out, stderr=subprocess.DEVNULL, env=self.env)
        self.base = None
        for _ in range(200):
            with open(os.path.join(work, "serve.out")) as f:
                m = re.search(r"^listening on (\S+)", f.read(), re.M)
            if m:
                self.base = m.group(1)
                break
            time.sleep(0.05)
        if not self.base:
            raise SystemExit("adversarial-e2e: mailsec serve did not start")

    def close(self):
        self.server.terminate()
        self.server.wait()
        subprocess.run(["gpgconf", "--homedir", self.gnupg, "--kill", "all"], capture_output=True)

    def run(self, args, stdin=None):
        result = subprocess.run([self.mailsec] + args, input=stdin, capture_output=True, env=self.env, timeout=120)
        return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")

    def manifest_copies(self, out):
        try:
            with open(os.path.join(out, "manifest.json")) as f:
                manifest = json.load(f)
        except Exception:
            return [], None
        copies = [(f"{c.get('kind')} {c.get('file')}", os.path.join(out, c["file"]), "headers" if c.get("kind") == "letter" else "all")
                  for c in manifest.get("copies", []) if c.get("file")]
        return copies, manifest.get("readingPage")

    def commands(self, sample, folder):
        """Each command on the mail: (status, stderr, [(label, path, scope)], extra readings)."""
        mail = os.path.join(folder, "mail.eml")
        with open(mail, "wb") as f:
            f.write(sample.mail)
        results = {}
        status, stdout, errors = self.run(["redact", mail])
        copies = []
        if status == 0:
            path = os.path.join(folder, "redacted.eml")
            with open(path, "wb") as f:
                f.write(stdout)
            copies.append(("postcard", path, "all"))
        results["redact"] = (status, errors, copies, [], bool(stdout) and status != 0)

        out = os.path.join(folder, "encrypt")
        status, _, errors = self.run(["encrypt", "--out", out, mail])
        copies, _ = self.manifest_copies(out)
        results["encrypt"] = (status, errors, copies, [], status != 0 and bool(copies))

        for name in os.listdir(self.outbox):
            os.unlink(os.path.join(self.outbox, name))
        status, _, errors = self.run(["filter", "--config", self.filter_config, "-f", "alice@example.org", "--",
                                      "bob@example.org", "dora@example.net"], stdin=sample.mail)
        copies = []
        target = os.path.join(folder, "filter")
        os.mkdir(target)
        for name in sorted(os.listdir(self.outbox)):
            if name.endswith(".eml"):
                with open(os.path.join(self.outbox, name[:-4] + ".args")) as f:
                    recipients = f.read().split(" -- ")[-1].split()
                shutil.move(os.path.join(self.outbox, name), os.path.join(target, name))
                letter = recipients == ["bob@example.org"]
                copies.append(("letter" if letter else "copy to " + ",".join(recipients), os.path.join(target, name), "headers" if letter else "all"))
        results["filter"] = (status, errors, copies, [], status != 0 and bool(copies))

        out = os.path.join(folder, "published")
        status, _, errors = self.run(["encrypt", "--out", out, "--extension", "partially-encrypted", "--publish-url", self.base,
                                      "--publish-token-file", self.token, "--password-to", os.path.join(folder, "password"), mail])
        copies, page = self.manifest_copies(out)
        extra = []
        if status == 0 and page and page.get("url"):
            ident = page["url"].rstrip("/").rsplit("/", 1)[-1]
            try:
                with urllib.request.urlopen(f"{self.base.rstrip('/')}/api/postcards/{ident}", timeout=20) as response:
                    document = json.loads(response.read())
                for field in ("from", "subject", "body"):
                    extra.append((f"document {field}", "".join(s for s in document.get(field, []) if isinstance(s, str))))
                extra.append(("document json", json.dumps(document, ensure_ascii=False)))
            except Exception as error:
                extra.append((f"document not readable ({type(error).__name__})", ""))
            extra.append(("page", page["url"]))
        results["published"] = (status, errors, copies, extra, status != 0 and bool(copies))
        return results


# --------------------------------------------------------------------------- the run
def samples(args, tools):
    if args.mail:
        parts = args.mail.split(":")
        return [hostile_classes.make(parts[0], int(parts[1]), len(parts) < 3, tools)]
    import random
    chosen = [c for c in hostile_classes.CLASSES if not args.classes or c in args.classes.split(",")]
    out = []
    for index, cls in enumerate(hostile_classes.CLASSES):
        rng = random.Random(f"{args.seed}/{cls}")
        seeds = [rng.getrandbits(48) for _ in range(args.count + max(1, args.count // 3))]
        if cls not in chosen:
            continue
        for number, seed in enumerate(seeds):
            out.append(hostile_classes.make(cls, seed, number < args.count, tools))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mailsec", help="the mailsec binary (not needed with --self-check)")
    parser.add_argument("--self-check", action="store_true",
                        help="read every generated mail itself as if it were the postcard: each hostile one must be found "
                             "(every secret word in some reading), so the readers can fail")
    parser.add_argument("--count", type=int, default=6, help="hostile mails per class (and a third as many controls)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--mail", help="one mail: CLASS:SEED[:control]")
    parser.add_argument("--classes", help="comma-separated classes")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--report", help="write every failing mail, with its readings' hits, to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    if not 1 <= args.count <= 1000:
        parser.error("--count must be 1..1000")
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(6), "big")
    started = time.time()
    if args.self_check:
        return self_check(args)
    if not args.mailsec:
        parser.error("--mailsec is needed")
    work = tempfile.mkdtemp(prefix="ms-adv21-")
    tools = hostile_classes.Tools()
    harness = browser = None
    try:
        harness = Harness(args.mailsec, work)
        mails = samples(args, tools)
        print(f"adversarial-e2e: seed {args.seed}, {len(mails)} mails, {len(hostile_classes.CLASSES)} classes", flush=True)
        outcomes = []
        documents = []
        for index, sample in enumerate(mails):
            folder = os.path.join(work, str(index))
            os.mkdir(folder, 0o700)
            results = harness.commands(sample, folder)
            outcome = {"sample": sample, "commands": {}}
            for command, (status, errors, copies, extra, wrote_on_failure) in results.items():
                entry = {"status": status, "errors": errors, "hits": [], "problems": [], "texts": [], "documents": [], "pages": []}
                if wrote_on_failure:
                    entry["problems"].append(f"exited {status} but wrote copies")
                for label, path, scope in copies:
                    try:
                        readings, _ = read_copy(path, scope)
                    except Exception as error:
                        entry["problems"].append(f"the {label} cannot be read: {type(error).__name__}: {error}")
                        continue
                    entry["texts"] += [(f"{label}: {v}", t) for v, t in readings.texts]
                    entry["lenient"] = entry.get("lenient", []) + [(label, path, scope)]
                    for view, data, mime, charset in readings.documents:
                        entry["documents"].append((f"{label}: {view}", data, mime, charset))
                        documents.append((f"{label}: {view}", data, mime, charset))
                for view, text in extra:
                    if view == "page":
                        entry["pages"].append(text)
                    else:
                        entry["texts"].append((view, text))
                outcome["commands"][command] = entry
            outcomes.append(outcome)
            if (index + 1) % 25 == 0:
                print(f"adversarial-e2e: {index + 1}/{len(mails)} mails run ({time.time() - started:.0f} s)", flush=True)
        if not args.no_browser:
            browser = Browser()
        cache = {}
        for outcome in outcomes:
            sample = outcome["sample"]
            tokens = [t.lower() for t in sample.tokens]
            for command, entry in outcome["commands"].items():
                texts = list(entry["texts"])
                for view, rendered in render_all(browser, entry["documents"], cache).items():
                    texts += rendered
                for url in entry["pages"]:
                    if browser:
                        texts += [(f"reading page {v}", t) for v, t in browser.read(url, wait_ready=True)]
                # The lenient readings of the earlier suite (not its sniffed charsets: no reader is known to sniff).
                for label, path, scope in entry.get("lenient", []):
                    lenient = mail_views.check({"file": path, "tokens": tokens, "scope": scope})
                    texts_hits = [(f"{label}: lenient {h['view']}", h["found"]) for h in lenient["hits"] if not h["view"].startswith("sniff")]
                    entry["hits"] += texts_hits
                entry["hits"] += search(texts, tokens)
                # A postcard that says a part was held back (the rebuild's note).
                entry["withheld"] = any(re.search(r"withheld|held back", t, re.I) for v, t in texts if "get_content" in v)
                entry["readings"] = len(texts)
                del entry["texts"], entry["documents"]
        table, failing = summarize(outcomes, args.seed, time.time() - started, browser.pages if browser else 0)
        print(table)
        if args.report:
            with open(args.report, "w") as f:
                f.write(table + "\n\n" + "\n\n".join(failing))
        for text in failing[:30]:
            print(text[:1500], file=sys.stderr)
        if failing:
            print(f"adversarial-e2e: {len(failing)} mails broke the rule; replay one with --mail CLASS:SEED "
                  f"(seed {args.seed})", file=sys.stderr)
        return 1 if failing else 0
    finally:
        if browser:
            browser.close()
        if harness:
            harness.close()
        tools.close()
        Tools.close()
        if args.keep:
            print(f"adversarial-e2e: work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def self_check(args):
    """The readers against the unchanged mails: a reader that misses a hidden span would let a leak pass."""
    tools = hostile_classes.Tools()
    hostile_classes.ANCHORS = False
    browser = None if args.no_browser else Browser()
    work = tempfile.mkdtemp(prefix="ms-adv21-self-")
    missed, cache = [], {}
    try:
        for index, sample in enumerate(samples(args, tools)):
            path = os.path.join(work, f"{index}.eml")
            with open(path, "wb") as f:
                f.write(sample.mail)
            readings, _ = read_copy(path, "all")
            texts = list(readings.texts)
            for view, rendered in render_all(browser, readings.documents, cache).items():
                texts += rendered
            hits = search(texts, [t.lower() for t in sample.tokens])
            found = {token for _, token in hits}
            lost = [t for t in sample.tokens if t not in found]
            if sample.marked and lost:
                missed.append(f"{sample.cls} [{sample.variant}] --mail {sample.replay}: not found: {', '.join(lost)}")
            elif sample.marked and "marker" not in found:
                missed.append(f"{sample.cls} [{sample.variant}] --mail {sample.replay}: no reading shows a whole marker")
            if not sample.marked and hits:
                missed.append(f"{sample.cls} [{sample.variant}] control --mail {sample.replay}: a hit without a span: {hits[:2]}")
    finally:
        if browser:
            browser.close()
        tools.close()
        Tools.close()
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(missed) or "adversarial-e2e: self-check: every secret word of every hostile mail is found by the readers")
    return 1 if missed else 0


def classify(sample, entry):
    status, errors = entry["status"], entry["errors"]
    lines = [l for l in errors.split("\n") if l]
    if entry["hits"]:
        return "LEAK"
    if not sample.marked:
        return "ok" if status == 0 and not entry["problems"] else "control refused" if status == 65 else "broken"
    if status == 0:
        if entry["problems"]:
            return "broken"
        return "withheld" if entry.get("withheld") else "censored"
    allowed = (65, 69) if sample.signed else (65,)
    if status in allowed and len(lines) == 1 and lines[0].startswith("mailsec") and not entry["problems"]:
        return "refused"
    return "broken"


def summarize(outcomes, seed, seconds, pages):
    kinds = ["censored", "withheld", "refused", "LEAK", "broken"]
    rows = []
    failing = []
    header = f"{'class':<15}{'mails':>6}{'ctl':>5}  " + "  ".join(f"{c:<19}" for c in COMMANDS) + "  controls"
    sub = " " * 28 + "  ".join(f"{'c/w/r/LEAK/brk':<19}" for _ in COMMANDS)
    totals = {c: dict.fromkeys(kinds, 0) for c in COMMANDS}
    for cls in hostile_classes.CLASSES:
        mine = [o for o in outcomes if o["sample"].cls == cls]
        if not mine:
            continue
        cells = []
        for command in COMMANDS:
            counts = dict.fromkeys(kinds, 0)
            for o in mine:
                if not o["sample"].marked:
                    continue
                entry = o["commands"][command]
                counts[classify(o["sample"], entry)] += 1
            for k in kinds:
                totals[command][k] += counts[k]
            cells.append("/".join(str(counts[k]) for k in kinds))
        controls = [o for o in mine if not o["sample"].marked]
        control_ok = sum(all(classify(o["sample"], o["commands"][c]) == "ok" for c in COMMANDS) for o in controls)
        rows.append(f"{cls:<15}{sum(o['sample'].marked for o in mine):>6}{len(controls):>5}  " + "  ".join(f"{c:<19}" for c in cells)
                    + f"  {control_ok}/{len(controls)} out")
        for o in mine:
            bad = {c: classify(o["sample"], o["commands"][c]) for c in COMMANDS}
            if any(v in ("LEAK", "broken", "control refused") for v in bad.values()):
                sample = o["sample"]
                lines = [f"{sample.cls} [{sample.variant}] {'hostile' if sample.marked else 'control'} replay: --mail {sample.replay}"]
                for c in COMMANDS:
                    entry = o["commands"][c]
                    lines.append(f"  {c}: exit {entry['status']} -> {bad[c]}" + (f"; stderr {entry['errors'].strip()[:200]!r}" if entry["status"] else ""))
                    for p in entry["problems"]:
                        lines.append("    " + p)
                    seen = {}
                    for view, found in entry["hits"]:
                        seen.setdefault(found, []).append(view)
                    for found, views in seen.items():
                        views.sort(key=lambda v: "lenient" in v)  # what a recipient's software reads, first
                        lines.append(f"    {'a marker' if found == 'marker' else found} in {len(views)} readings, e.g. " + "; ".join(views[:3]))
                lines.append("  --- mail ---\n" + sample.mail.decode("utf-8", "replace")[:4000])
                failing.append("\n".join(lines))
    total = "all".ljust(15) + f"{sum(o['sample'].marked for o in outcomes):>6}{sum(not o['sample'].marked for o in outcomes):>5}  " + \
        "  ".join(f"{'/'.join(str(totals[c][k]) for k in kinds):<19}" for c in COMMANDS)
    title = (f"Adversarial mails, issue 21 (seed {seed}, {seconds:.0f} s, {pages} pages rendered): per class and command, "
             "hostile mails censored/withheld/refused/LEAK/broken; controls that came out")
    return "\n".join([title, header, sub] + rows + [total]), failing


if __name__ == "__main__":
    sys.exit(main())
