"""Hostile mails for issue 21 (postcards are rebuilt): one class per reading a
recipient's software has and mailsec may not. Used by scripts/adversarial-e2e.

Every mail is made from one seed (`make(CLASS, SEED, marked)`), so a failure is
replayed with `scripts/adversarial-e2e --mail CLASS:SEED`. A span holds random
secret words ("zq" and lower-case letters) that the readers search for. Most
hostile mails also carry one ordinary span in a plain text part or the Subject
(the "anchor"): mailsec then knows the mail has spans, and the trick is whether
it finds the hidden one too. `marked=False` makes the same shape without any
marker (a control): it must come out (exit 0), so refusing everything cannot pass.
"""
import base64
import binascii
import gzip
import io
import os
import quopri
import random
import subprocess
import tempfile
import zipfile
import zlib

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Fixtures", "keys")


# False: no ordinary span beside the hostile part (the readers' self-check: the hidden marker alone must be found).
ANCHORS = True


class Sample:
    def __init__(self, cls, seed, marked, variant, mail, tokens, signed=False):
        self.cls, self.seed, self.marked, self.variant = cls, seed, marked, variant
        self.mail, self.tokens, self.signed = mail, tokens, signed

    @property
    def replay(self):
        return f"{self.cls}:{self.seed}" + ("" if self.marked else ":control")


class Tools:
    """gpg and openssl, each set up once per run in a private temporary folder."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="ms-advgen-")  # 0700
        self.gnupg = os.path.join(self.folder, "gnupg")
        os.mkdir(self.gnupg, 0o700)
        self._gpg(["--import", os.path.join(FIXTURES, "alice.sec.asc")])
        key, cert = os.path.join(self.folder, "key.pem"), os.path.join(self.folder, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-subj", "/CN=Alice/emailAddress=alice@example.org", "-days", "2", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
        self.key, self.cert = key, cert

    def _gpg(self, args, data=b""):
        result = subprocess.run(["gpg", "--homedir", self.gnupg, "--batch", "--yes", "--no-tty", "--pinentry-mode", "loopback",
                                 "--passphrase", ""] + args, input=data, capture_output=True)
        if result.returncode != 0:
            raise RuntimeError("gpg failed: " + result.stderr.decode(errors="replace")[-300:])
        return result.stdout

    def openpgp(self, kind, data, armor=True):
        """literal (--store -z 0), compressed (--store -z 6), signed (--sign), clearsigned, detached."""
        args = {"literal": ["--store", "-z", "0"], "compressed": ["--store", "-z", "6", "--compress-algo", "zlib"],
                "signed": ["--sign", "-z", "0"], "signed-compressed": ["--sign"], "clearsigned": ["--clearsign"],
                "detached": ["--detach-sign"]}[kind]
        return self._gpg((["--armor"] if armor else []) + args + ["-o", "-"], data)

    def smime(self, data, detached):
        args = ["openssl", "cms", "-sign", "-binary", "-signer", self.cert, "-inkey", self.key, "-outform", "DER"]
        args += [] if detached else ["-nodetach"]
        return subprocess.run(args, input=data, capture_output=True, check=True).stdout

    def close(self):
        subprocess.run(["gpgconf", "--homedir", self.gnupg, "--kill", "all"], capture_output=True)
        subprocess.run(["rm", "-rf", self.folder])


class Gen:
    def __init__(self, seed, marked, tools):
        self.r = random.Random(seed)
        self.marked = marked
        self.tools = tools
        self.tokens = []
        self.variant = ""
        self.signed = False

    # ---- small pieces -------------------------------------------------------
    def pick(self, items):
        return self.r.choice(items)

    def chance(self, n):
        return self.r.randrange(n) == 0

    def letters(self, n):
        return "".join(self.r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))

    def token(self):
        word = "zq" + self.letters(self.r.randint(7, 11))
        if self.marked:
            self.tokens.append(word)
            return word
        return "plain" + word[2:]  # a control: the same shape, nothing secret, no "zq"

    def open_marker(self):
        return self.pick(["[[private]]", "[[PRIVATE]]", "[[Private]]"]) if self.marked else ""

    def close_marker(self):
        return self.pick(["[[/private]]", "[[/PRIVATE]]", "[[/Private]]"]) if self.marked else ""

    def words(self):
        return " ".join(self.token() for _ in range(self.r.randint(1, 3)))

    def span(self):
        return self.open_marker() + self.words() + self.close_marker()

    def filler(self):
        return self.pick(["Hello team,", "plain words here", "Grüße aus Köln", "see the notes below", "Meeting at ten",
                          "nothing secret in this line", "regards, Alice"])

    def prose(self, spans=1):
        lines = [self.filler() for _ in range(self.r.randint(1, 3))]
        for _ in range(spans):
            lines.insert(self.r.randint(0, len(lines)), self.filler()[: self.r.randint(0, 8)] + " " + self.span())
        return "\n".join(lines) + "\n"

    def boundary(self):
        return "b-" + self.letters(12)

    # ---- MIME ---------------------------------------------------------------
    def charset_for(self, text, friendly=True):
        choices = ["utf-8", "utf-8", "iso-8859-1", "windows-1252", "iso-8859-15"] + ([] if friendly else ["utf-16"])
        for _ in range(6):
            charset = self.pick(choices)
            try:
                text.encode(charset)
                return charset
            except UnicodeEncodeError:
                continue
        return "utf-8"

    def cte_body(self, data, text_like=True, allow_raw=True):
        """A random transfer encoding that keeps the bytes."""
        options = ["base64", "quoted-printable"]
        if allow_raw and text_like and b"\r" not in data and b"\0" not in data and max((len(l) for l in data.split(b"\n")), default=0) < 900:
            options += ["8bit"] if any(b > 127 for b in data) else ["7bit", "8bit"]
        cte = self.pick(options)
        if cte == "base64":
            body = base64.encodebytes(data).decode("ascii")
        elif cte == "quoted-printable":
            body = quopri.encodestring(data).decode("ascii")
            if not body.endswith("\n"):
                body += "=\n"
        else:
            body = data.decode("utf-8", "surrogateescape")
        return cte, body

    def leaf(self, ctype, data, headers=(), text_like=None, cte=None):
        if isinstance(data, str):
            data = data.encode("utf-8")
        if text_like is None:
            text_like = ctype.startswith("text/")
        if cte is None:
            cte, body = self.cte_body(data, text_like)
        else:
            body = data.decode("utf-8", "surrogateescape")
        lines = ["Content-Type: " + ctype] + list(headers) + ["Content-Transfer-Encoding: " + cte]
        return "\n".join(lines) + "\n\n" + body + ("" if body.endswith("\n") else "\n")

    def text(self, text, subtype="plain", headers=(), extra=""):
        charset = self.charset_for(text)
        return self.leaf(f"text/{subtype}; charset={charset}{extra}", text.encode(charset), headers)

    def attachment(self, ctype, data, filename, inline=False):
        disposition = "inline" if inline else "attachment"
        return self.leaf(f"{ctype}; name=\"{filename}\"", data, [f"Content-Disposition: {disposition}; filename=\"{filename}\""],
                         text_like=False)

    def multipart(self, subtype, parts, extra=""):
        b = self.boundary()
        return f"Content-Type: multipart/{subtype}; boundary=\"{b}\"{extra}\n\n" + "".join(f"--{b}\n{p}" for p in parts) + f"--{b}--\n"

    def anchor(self, part):
        """The hostile part, with one ordinary span beside it (or in the Subject)."""
        where = self.r.randrange(4)
        if not ANCHORS:
            return part, ""
        if where == 0:
            return part, "Plans " + self.span()
        plain = self.text("Hello,\n" + self.prose())
        parts = [plain, part] if self.chance(2) else [part, plain]
        if where == 3:
            return self.multipart("mixed", [self.multipart("alternative", [plain, part]) if part.startswith("Content-Type: text/html") else parts[0], parts[1]]), ""
        return self.multipart("mixed", parts), ""

    def envelope(self, body, subject="", extra=()):
        subject = subject or f"Quarterly notes {self.r.randint(1, 999)}"
        head = ["From: Alice <alice@example.org>", "To: Bob <bob@example.org>", "Cc: Dora <dora@example.net>",
                "Subject: " + subject, "Date: Tue, 24 Nov 2026 10:00:00 +0000",
                f"Message-ID: <adv21.{self.r.getrandbits(48)}@example.org>", "MIME-Version: 1.0"] + list(extra)
        return "\n".join(head) + "\n" + body

    def anchored(self, part, extra=()):
        body, subject = self.anchor(part)
        return self.envelope(body, subject=subject, extra=extra)

    # ---- the classes --------------------------------------------------------
    def html_doc(self, inner, head=""):
        return f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{head}</head><body>\n<p>{self.filler()}</p>\n{inner}\n</body></html>\n"

    def split_marked(self):
        """A span as (open marker, words, close marker, the whole)."""
        o, w, c = self.open_marker(), self.words(), self.close_marker()
        return o, w, c, o + w + c

    def cut(self, text):
        return self.r.randint(1, max(1, len(text) - 1))

    def interleave(self, text, insert):
        """`text` with `insert()` put between characters at a few random places (never none)."""
        out, placed = [], False
        for i, ch in enumerate(text):
            out.append(ch)
            if i < len(text) - 1 and (self.chance(4) or (not placed and i == len(text) - 2)):
                out.append(insert())
                placed = True
        return "".join(out)

    def c_html_parse(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(8)
        if kind == 0:
            self.variant = "NUL inside the marker and the words"
            inner = "<p>" + self.interleave(whole, lambda: "\0") + "</p>"
        elif kind == 1:
            host = self.pick(["svg", "math"])
            self.variant = f"CDATA inside {host}"
            inner = (f"<svg><text x=\"0\" y=\"15\"><![CDATA[{whole}]]></text></svg>" if host == "svg"
                     else f"<math><mtext><![CDATA[{whole}]]></mtext></math>")
            if self.chance(2):
                # the marker half outside, half inside the CDATA section
                k = self.cut(o) if o else 0
                inner = f"<svg><text x=\"0\" y=\"15\">{o[:k]}<![CDATA[{o[k:]}{w}]]>{c}</text></svg>"
        elif kind == 2:
            splitter = self.pick(["<style>p{}</style>", "<script>var a=1</script>", "<template>x</template>", "<span hidden>x</span>",
                                  "<span style=\"display:none\">x</span>", "<!-- x -->", "<noscript>x</noscript>", "<noembed>x</noembed>",
                                  "<title>x</title>", "<select></select>", "<iframe>x</iframe>", "<? x ?>", "<!x>"])
            self.variant = f"a raw-text or hidden element {splitter.split('>')[0]}> splitting the marker"
            inner = "<p>" + self.interleave(o, lambda: splitter) + w + self.interleave(c, lambda: splitter) + "</p>"
        elif kind == 3:
            element = self.pick(["textarea", "xmp", "title", "noscript", "style", "script", "iframe", "noembed", "noframes"])
            self.variant = f"<{element}><!--</{element}> then the span, then -->"
            inner = f"<{element}><!--</{element}><p>{whole}</p>-->"
        elif kind == 4:
            self.variant = "<plaintext>: everything after it is text"
            inner = f"<plaintext><!-- {whole} --></plaintext><p>"
        elif kind == 5:
            letter = self.pick(["ü", "é", "ж", "中", "ß", "Ω"])
            self.variant = f"'<' before the non-ASCII letter {letter}"
            inner = f"<p><{letter} {whole} ></p>" if self.chance(2) else f"<p><{letter}{whole}</p>"
        elif kind == 6:
            self.variant = "numeric character references without ';'"
            def ref(ch, following):
                # Without ';' a reference takes every digit after it: a following digit needs the ';'.
                if following in "0123456789abcdefABCDEF":
                    return f"&#{ord(ch)}" + (";" if following.isdigit() else "")
                return self.pick([f"&#{ord(ch)}", f"&#x{ord(ch):x}", f"&#X{ord(ch):X}", f"&#0{ord(ch)}"])
            padded = whole + " "
            inner = "<p>" + "".join(ref(ch, padded[i + 1]) if ch in "[]/" or self.chance(3) else ch for i, ch in enumerate(whole)) + " </p>"
        else:
            element = self.pick(["textarea", "title"])
            self.variant = f"character references inside <{element}> (RCDATA)"
            inner = f"<{element}>" + "".join(f"&#{ord(ch)};" if ch in "[]" or self.chance(4) else ch for ch in whole) + f"</{element}>"
        return self.anchored(self.html_part(self.html_doc(inner)))

    def html_part(self, document, subtype="html"):
        charset = self.charset_for(document, friendly=self.chance(3) == False)
        data = document.encode(charset) if charset != "utf-16" else document.encode("utf-16")
        document_charset = charset
        return self.leaf(f"text/{subtype}; charset={document_charset}", data)

    def c_css_text(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(5)
        pseudo = self.pick(["::before", "::after", ":before", ":after"])
        if kind == 0:
            self.variant = f"CSS content: string on {pseudo}"
            css = f"p.n{pseudo}{{content:\"{whole}\"}}"
            inner = "<p class=\"n\">note</p>"
        elif kind == 1:
            self.variant = f"CSS content: escaped code points on {pseudo}"
            esc = "".join(f"\\{ord(ch):x} " if self.chance(2) else ch for ch in whole)
            css = f"p.n{pseudo}{{content:\"{esc}\"}}"
            inner = "<p class=\"n\">note</p>"
        elif kind == 2:
            self.variant = f"CSS content: attr() of a split attribute on {pseudo}"
            k = self.cut(whole)
            css = f"p{pseudo}{{content:attr(data-a) attr(data-b)}}"
            inner = f"<p data-a=\"{whole[:k]}\" data-b=\"{whole[k:]}\">note</p>"
        elif kind == 3:
            self.variant = "CSS list marker string (::marker, list-style-type)"
            css = f"li{{list-style-type:\"{whole} \"}}" if self.chance(2) else f"li::marker{{content:\"{whole}\"}}"
            inner = "<ul><li>item</li></ul>"
        else:
            self.variant = "CSS content: several strings concatenated"
            pieces, rest = [], whole
            while rest:
                k = self.r.randint(1, 5)
                pieces.append(rest[:k])
                rest = rest[k:]
            css = f"div{pseudo}{{content:" + " ".join(f"\"{p}\"" for p in pieces) + "}"
            inner = "<div>x</div>"
        where = self.pick(["head", "body", "svg"])
        if where == "head":
            document = self.html_doc(inner, head=f"<style>{css}</style>")
        elif where == "body":
            document = self.html_doc(f"<style>{css}</style>" + inner)
        else:
            document = self.html_doc(f"<svg width=\"0\" height=\"0\"><style>{css}</style></svg>" + inner)
        return self.anchored(self.html_part(document))

    def data_url(self, document, depth):
        charset = self.pick(["utf-8", "utf-16le", "utf-16be", "iso-8859-1", "windows-1252", "utf-7"]) if depth == 0 else "utf-8"
        try:
            data = document.encode(charset if charset != "utf-7" else "utf-7")
        except UnicodeEncodeError:
            charset, data = "utf-8", document.encode("utf-8")
        if charset == "utf-7":
            charset = "utf-8"  # browsers refuse UTF-7; keep it readable
            data = document.encode("utf-8")
        if self.chance(2) or charset.startswith("utf-16"):
            return f"data:text/html;charset={charset};base64," + base64.b64encode(data).decode()
        return f"data:text/html;charset={charset}," + "".join(f"%{b:02X}" if b > 126 or b < 33 or chr(b) in "%\"'<>#[]" or self.chance(5) else chr(b) for b in data)

    def nest(self, document, depth):
        """`document` inside srcdoc or a data: URL, `depth` times over."""
        for level in range(depth):
            how = self.pick(["srcdoc", "iframe-data", "object-data", "embed-data"])
            if how == "srcdoc":
                escaped = document.replace("&", "&amp;").replace("\"", "&quot;")
                if self.chance(2):
                    escaped = escaped.replace("[", "&#91;").replace("]", "&#93;")
                document = self.html_doc(f"<iframe srcdoc=\"{escaped}\"></iframe>")
            else:
                url = self.data_url(document, level)
                element = {"iframe-data": f"<iframe src=\"{url}\"></iframe>", "object-data": f"<object data=\"{url}\" type=\"text/html\"></object>",
                           "embed-data": f"<embed src=\"{url}\" type=\"text/html\">"}[how]
                document = self.html_doc(element)
            self.variant += ("" if not self.variant else " in ") + how
        return document

    def c_data_srcdoc(self):
        o, w, c, whole = self.split_marked()
        inner = f"<p>{whole}</p>" if self.chance(2) else "<p>" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "</p>"
        self.variant = ""
        document = self.nest(f"<!DOCTYPE html><html><body>{inner}</body></html>", self.r.randint(1, 3))
        return self.anchored(self.html_part(document))

    def c_xml_dtd(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(3)
        if kind == 0:
            self.variant = "an internal DTD entity holding the span"
            dtd = f"<!ENTITY s \"{whole}\">"
            body = "<p>&s;</p>"
        elif kind == 1:
            self.variant = "internal DTD entities holding the marker's halves"
            k = self.cut(whole)
            dtd = f"<!ENTITY a \"{whole[:k]}\"><!ENTITY b \"{whole[k:]}\">"
            body = "<p>&a;&b;</p>"
        else:
            self.variant = "a DTD default attribute value (ATTLIST)"
            dtd = f"<!ATTLIST p title CDATA \"{whole}\">"
            body = "<p>note</p>"
        document = (f"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!DOCTYPE html [ {dtd} ]>\n"
                    f"<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>n</title></head><body><p>{self.filler()}</p>{body}</body></html>\n")
        return self.anchored(self.leaf("application/xhtml+xml; charset=utf-8", document.encode("utf-8"), text_like=True))

    def c_json(self):
        o, w, c, whole = self.split_marked()
        esc = "".join(f"\\u{ord(ch):04x}" if ch in "[]/" or self.chance(2) else ch for ch in whole)
        if self.chance(3):
            esc = esc.replace("/", "\\/")
        key = self.pick(["note", "description", "\\u006eote"])
        document = f"{{\"{key}\": \"{esc}\", \"n\": {self.r.randint(1, 99)}}}\n"
        ctype, name = self.pick([("application/json", "data.json"), ("text/json", "data.json"), ("application/octet-stream", "data.json"),
                                 ("application/ld+json", "x.jsonld")])
        self.variant = f"JSON \\u escapes, {ctype} {name}"
        return self.anchored(self.attachment(ctype, document.encode(), name))

    def c_rtf(self):
        o, w, c, whole = self.split_marked()
        out = []
        for ch in whole:
            how = self.r.randrange(4)
            if how == 0:
                out.append(f"\\'{ord(ch):02x}")
            elif how == 1:
                out.append(f"\\u{ord(ch)}?")
            elif how == 2 and ch.isalpha():
                out.append("{\\b " + ch + "}")
            else:
                out.append(ch if ch not in "\\{}" else "\\" + ch)
        document = "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Arial;}}\\f0\\fs20 " + self.filler() + "\\par " + "".join(out) + "\\par}\n"
        ctype, name = self.pick([("application/rtf", "note.rtf"), ("text/rtf", "note.rtf"), ("application/octet-stream", "note.rtf")])
        self.variant = f"RTF \\'xx and \\uN escapes, {ctype}"
        return self.anchored(self.attachment(ctype, document.encode(), name))

    def c_vcard(self):
        o, w, c, whole = self.split_marked()
        pieces = [f"={b:02X}" if chr(b) in "[]=" or b > 126 or self.chance(3) else chr(b) for b in whole.encode()]
        folded, line = [], ""
        for piece in pieces:
            line += piece
            if len(line) > 12 and self.chance(3):
                folded.append(line)
                line = ""
        folded.append(line)
        prop = self.pick(["NOTE", "TITLE", "ORG", "FN", "ADR;HOME"])
        card = ("BEGIN:VCARD\r\nVERSION:2.1\r\nN:Doe;Jane\r\n" + f"{prop};ENCODING=QUOTED-PRINTABLE;CHARSET=UTF-8:" + "=\r\n".join(folded)
                + "\r\nEND:VCARD\r\n")
        ctype, name = self.pick([("text/vcard", "jane.vcf"), ("text/x-vcard", "jane.vcf"), ("application/octet-stream", "jane.vcf")])
        self.variant = f"vCard 2.1 quoted-printable {prop}, {ctype}"
        return self.anchored(self.attachment(ctype, card.encode(), name))

    def c_icalendar(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(3)
        if kind == 0:
            self.variant = "X-ALT-DESC;FMTTYPE=text/html with references"
            html = "<html><body><p>" + "".join(f"&#{ord(ch)};" if ch in "[]" or self.chance(4) else ch for ch in whole) + "</p></body></html>"
            value = "X-ALT-DESC;FMTTYPE=text/html:" + html.replace(",", "\\,").replace(";", "\\;")
        elif kind == 1:
            self.variant = "a property parameter (ATTENDEE;CN=) holding the span"
            value = f"ATTENDEE;CN=\"{whole}\";ROLE=REQ-PARTICIPANT:mailto:dora@example.net"
        else:
            self.variant = "ATTACH;ENCODING=BASE64 with the span"
            value = "ATTACH;FMTTYPE=text/plain;ENCODING=BASE64;VALUE=BINARY:" + base64.b64encode(("Note " + whole).encode()).decode()
        folded, rest = [], value
        while len(rest) > 0:
            k = self.r.randint(8, 40)
            folded.append(rest[:k])
            rest = rest[k:]
        calendar = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//adv21//EN\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
                    f"UID:{self.letters(10)}@example.org\r\nDTSTART:20261201T100000Z\r\nSUMMARY:Meeting\r\n" + "\r\n ".join(folded)
                    + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
        if self.chance(2):
            part = self.leaf("text/calendar; charset=utf-8; method=REQUEST", calendar.encode())
        else:
            part = self.attachment(self.pick(["text/calendar", "application/ics"]), calendar.encode(), "invite.ics")
        return self.anchored(part)

    def c_enriched(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(3)
        if kind == 0:
            self.variant = "<param> (not shown) splitting the marker"
            text = self.interleave(o, lambda: "<param>" + self.letters(3) + "</param>") + w + c
        elif kind == 1:
            self.variant = "commands inside the span"
            text = self.interleave(whole, lambda: self.pick(["<bold>", "</bold>", "<x-" + self.letters(3) + ">", "<nofill></nofill>"]))
        else:
            self.variant = "the span inside a <param> of a known command"
            text = f"<x-color><param>{whole}</param>colored</x-color>"
        document = "<bold>Hello</bold> all,\n\n" + text + "\n\n" + self.filler() + "\n"
        return self.anchored(self.leaf(self.pick(["text/enriched", "text/richtext"]) + "; charset=utf-8", document.encode()))

    def c_markdown(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(4)
        if kind == 0:
            self.variant = "backslash escapes"
            text = "".join("\\" + ch if ch in "[]/" else ch for ch in whole)
        elif kind == 1:
            self.variant = "character references"
            text = "".join(f"&#{ord(ch)};" if ch in "[]" or self.chance(4) else ch for ch in whole)
        elif kind == 2:
            self.variant = "inline HTML comments splitting the marker"
            text = self.interleave(o, lambda: "<!-- -->") + w + self.interleave(c, lambda: "<!-- -->")
        else:
            self.variant = "emphasis splitting the words"
            text = o + " ".join(t[:3] + "*" + t[3:] + "*" for t in w.split(" ")) + c
        document = "# Notes\n\n" + self.filler() + "\n\n" + text + "\n"
        return self.anchored(self.leaf("text/markdown; charset=utf-8; variant=CommonMark", document.encode()))

    def c_inline_binary(self):
        o, w, c, _ = self.split_marked()
        payload = ("Private note: " + o + w + c + "\n").encode()
        kind = self.pick(["uuencode", "yEnc", "BinHex"])
        self.variant = f"inline {kind} in text/plain"
        if kind == "uuencode":
            block = "begin 644 note.txt\n" + "".join(binascii.b2a_uu(payload[i:i + 45]).decode() for i in range(0, len(payload), 45)) + "`\nend\n"
        elif kind == "yEnc":
            block = yenc(payload, "note.txt")
        else:
            block = binhex4(payload, "note.txt")
        text = "Hello,\n" + self.prose() + "\n" + block + "\nBye\n"
        return self.envelope(self.text(text))

    def c_terminal(self):
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(5)
        if kind == 0:
            self.variant = "backspace overstrike (x BS c)"
            shown = "".join(self.pick(["_", ch, self.letters(1)]) + "\b" + ch for ch in whole)
        elif kind == 1:
            self.variant = "SGR and OSC sequences inside the marker"
            shown = self.interleave(whole, lambda: self.pick(["\x1b[1m", "\x1b[0m", "\x1b[31;1m", "\x1b]0;t\x07", "\x1b[?25l", "\x1b(B"]))
        elif kind == 2:
            self.variant = "pieces written out of order with cursor positioning (CHA)"
            pieces, at = [], 0
            while at < len(whole):
                k = self.r.randint(2, 6)
                pieces.append((at, whole[at:at + k]))
                at += k
            self.r.shuffle(pieces)
            shown = "".join(f"\x1b[{col + 1}G{piece}" for col, piece in pieces) + f"\x1b[{len(whole) + 1}G"
        elif kind == 3:
            self.variant = "carriage return overwriting a decoy"
            decoy = "x" * len(whole)
            k = self.cut(whole)
            shown = decoy[:k] + whole[k:] + "\r" + whole[:k]
        else:
            self.variant = "8-bit C1 CSI (U+009B) and cursor-back sequences"
            k = self.cut(whole)
            shown = whole[k:] + f"\x1b[{len(whole) - k}D" if False else whole[:k] + "zz\x9b2D" + whole[k:]
        text = "Hello,\n" + self.filler() + "\n" + shown + "\n" + self.filler() + "\n"
        return self.anchored(self.text(text))

    def c_controls(self):
        o, w, c, whole = self.split_marked()
        control = self.pick(["\0", "\x01", "\x07", "\x0b", "\x0c", "\x1a", "\x1c", "\x7f", "\x80", "\x85", "\x8d", "\x9c", "\x90"])
        self.variant = f"control U+{ord(control):04X} inside the marker and words"
        text = "Hello,\n" + self.interleave(whole, lambda: control) + "\n" + self.filler() + "\n"
        subject = ""
        if self.chance(3):
            self.variant += ", also in the Subject"
            subject = "=?utf-8?b?" + base64.b64encode(("Plan " + self.interleave(self.span(), lambda: control)).encode()).decode() + "?="
        part = self.text(text)
        if subject:
            return self.envelope(part, subject=subject)
        return self.anchored(part)

    def c_octet_attachments(self):
        o, w, c, whole = self.split_marked()
        kind = self.pick(["eml", "html", "ics", "txt", "svg"])
        if kind == "eml":
            inner = ("From: Carol <carol@example.com>\nTo: alice@example.org\nSubject: =?utf-8?q?" + "".join(f"={b:02X}" for b in whole.encode())
                     + "?=\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
                     + base64.encodebytes(("Note " + self.span() + "\n").encode()).decode())
            data, name = inner.encode(), "forwarded.eml"
        elif kind == "html":
            data, name = ("<html><body><p>" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "</p></body></html>").encode("utf-16"), "page.html"
        elif kind == "ics":
            data = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x@example.org\r\nSUMMARY:" + whole[:5] + "\r\n " + whole[5:]
                    + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n").encode()
            name = "invite.ics"
        elif kind == "svg":
            data = (f"<svg xmlns=\"http://www.w3.org/2000/svg\"><text y=\"20\">" + "".join(f"&#x{ord(ch):x};" if ch in "[]" else ch for ch in whole) + "</text></svg>").encode()
            name = "drawing.svg"
        else:
            data, name = ("Notes\n" + whole + "\n").encode("utf-16"), "notes.txt"
        self.variant = f"a .{kind} attachment declared as application/octet-stream"
        return self.anchored(self.attachment(self.pick(["application/octet-stream", "application/x-binary", "binary/octet-stream"]), data, name))

    def c_archives(self):
        o, w, c, whole = self.split_marked()
        kind = self.pick(["zip", "docx", "odt", "gzip", "pdf"])
        self.variant = f"{kind} holding the span"
        if kind == "zip":
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr("notes.txt", "Notes\n" + whole + "\n")
            data, ctype, name = buffer.getvalue(), "application/zip", "notes.zip"
        elif kind == "docx":
            k = self.cut(whole)
            document = ("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
                        f"<w:body><w:p><w:r><w:t>{whole[:k]}</w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>{whole[k:]}</w:t></w:r></w:p></w:body></w:document>")
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr("[Content_Types].xml", "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
                                 "<Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/word/document.xml\" "
                                 "ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>")
                archive.writestr("word/document.xml", document)
            data, ctype, name = buffer.getvalue(), "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "notes.docx"
        elif kind == "odt":
            k = self.cut(whole)
            content = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
                       "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\"><office:body><office:text>"
                       f"<text:p>{whole[:k]}<text:span>{whole[k:]}</text:span></text:p></office:text></office:body></office:document-content>")
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
                archive.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
            data, ctype, name = buffer.getvalue(), "application/vnd.oasis.opendocument.text", "notes.odt"
        elif kind == "gzip":
            data, ctype, name = gzip.compress(("Notes\n" + whole + "\n").encode(), mtime=0), "application/gzip", "notes.txt.gz"
        else:
            data, ctype, name = pdf_with_text(whole), "application/pdf", "notes.pdf"
        if self.chance(3):
            ctype = "application/octet-stream"
            self.variant += " (as octet-stream)"
        return self.anchored(self.attachment(ctype, data, name))

    def c_openpgp_plain(self):
        o, w, c, _ = self.split_marked()
        content = ("Hello,\n" + self.filler() + " " + o + w + c + "\n").encode()
        kinds = ["literal", "compressed", "signed", "signed-compressed", "clearsigned", "pgpmime-literal", "pgpmime-signed"]
        if not self.marked:
            # A control is a friendly shape: a mail labelled encrypted that is not is refused with or without
            # a marker (docs/postcards.md), so it has no control.
            kinds.remove("pgpmime-literal")
        kind = self.pick(kinds)
        self.signed = "signed" in kind
        self.variant = f"OpenPGP {kind} message (not encrypted)"
        if kind == "pgpmime-literal":
            # Dressed as PGP/MIME encryption, but the packets are a literal message.
            armored = self.tools.openpgp(self.pick(["literal", "compressed"]), content).decode()
            b = self.boundary()
            body = (f"Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=\"{b}\"\n\n"
                    f"--{b}\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n\n--{b}\nContent-Type: application/octet-stream; name=\"encrypted.asc\"\n\n"
                    + armored + f"\n--{b}--\n")
            return self.envelope(body)
        if kind == "pgpmime-signed":
            inner = "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + \
                quopri.encodestring(content).decode().replace("\n", "\r\n")
            signature = self.tools.openpgp("detached", inner.encode()).decode()
            b = self.boundary()
            body = (f"Content-Type: multipart/signed; micalg=pgp-sha256; protocol=\"application/pgp-signature\"; boundary=\"{b}\"\n\n"
                    f"--{b}\n" + inner.replace("\r\n", "\n") + f"\n--{b}\nContent-Type: application/pgp-signature; name=\"signature.asc\"\n\n"
                    + signature + f"\n--{b}--\n")
            return self.envelope(body)
        armored = self.tools.openpgp(kind, content).decode()
        text = "Hello,\n" + ("" if self.chance(2) else self.filler() + "\n\n") + armored
        if self.chance(3):
            return self.envelope(self.leaf("text/plain; charset=us-ascii", text.encode()), subject="Plans " + self.span() if not self.signed else "")
        return self.anchored(self.leaf("text/plain; charset=us-ascii", text.encode()))

    def c_smime_signed(self):
        o, w, c, _ = self.split_marked()
        entity = ("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nHello,\r\n" + o + w + c + "\r\n").encode()
        self.signed = True
        if self.chance(2):
            self.variant = "S/MIME opaque signed-data (application/pkcs7-mime)"
            der = self.tools.smime(entity, detached=False)
            ctype = self.pick(["application/pkcs7-mime; smime-type=signed-data; name=\"smime.p7m\"", "application/x-pkcs7-mime; smime-type=signed-data; name=\"smime.p7m\"",
                               "application/pkcs7-mime; name=\"smime.p7m\""])
            body = (f"Content-Type: {ctype}\nContent-Disposition: attachment; filename=\"smime.p7m\"\nContent-Transfer-Encoding: base64\n\n"
                    + base64.encodebytes(der).decode())
        else:
            self.variant = "S/MIME multipart/signed"
            der = self.tools.smime(entity, detached=True)
            b = self.boundary()
            body = (f"Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"{b}\"\n\n"
                    f"--{b}\n" + entity.decode().replace("\r\n", "\n") + f"\n--{b}\nContent-Type: application/pkcs7-signature; name=\"smime.p7s\"\n"
                    "Content-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=\"smime.p7s\"\n\n" + base64.encodebytes(der).decode() + f"\n--{b}--\n")
        return self.envelope(body)

    def c_bare_cr(self):
        mail = self.envelope(self.text("Hello,\n" + self.prose()), subject="Plans " + self.span() if self.chance(2) else "")
        how = self.pick(["every line", "the body only", "mixed CR and LF"])
        self.variant = f"bare CR line ends ({how})"
        if how == "every line":
            return mail.replace("\n", "\r")
        if how == "the body only":
            head, _, body = mail.partition("\n\n")
            return head + "\n\n" + body.replace("\n", "\r")
        return "".join(ch if ch != "\n" or self.chance(2) else "\r" for ch in mail)

    # ---- classes of issue 21's second round (r21leaks) ------------------------
    def c_qp_split(self):
        """A marker cut by quoted-printable soft line breaks, in a part kind other than plain text."""
        o, w, c, whole = self.split_marked()
        soft = self.pick(["=\n", "=\n", "=\r\n"])
        pieces, at = [], 0
        while at < len(whole):
            k = self.r.randint(1, 4)
            pieces.append("".join(f"={ord(ch):02X}" if ch in "[]=" and self.chance(2) else ch for ch in whole[at:at + k]))
            at += k
        encoded = soft.join(pieces)
        kind = self.pick(["html", "description", "plain-attachment", "xhtml"])
        self.variant = f"QP soft breaks {soft!r} inside the marker, {kind}"
        if kind == "html":
            body = "<html><body><p>" + self.filler() + "</p><p>" + encoded + "</p></body></html>\n"
            part = "Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n" + body
        elif kind == "xhtml":
            body = "<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>" + encoded + "</p></body></html>\n"
            part = "Content-Type: application/xhtml+xml; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n" + body
        elif kind == "description":
            # A field has no soft breaks: a QP encoded-word split over folded lines instead.
            text = ("Note " + whole).encode()
            words = []
            step = self.r.randint(4, 9)
            for i in range(0, len(text), step):
                words.append("=?utf-8?Q?" + "".join(chr(b) if b < 128 and chr(b).isalnum() else f"={b:02X}" for b in text[i:i + step]) + "?=")
            part = ("Content-Type: text/plain; charset=utf-8\nContent-Description: " + "\n ".join(words)
                    + "\nContent-Transfer-Encoding: 7bit\n\n" + self.filler() + "\n")
        else:
            part = ("Content-Type: text/plain; charset=utf-8; name=\"notes.txt\"\nContent-Disposition: attachment; filename=\"notes.txt\"\n"
                    "Content-Transfer-Encoding: quoted-printable\n\nNotes\n" + encoded + "\n")
        return self.anchored(part)

    def c_rfc2231_mixed(self):
        """File names in RFC 2231 continuations: charsets per segment, segments out of order, two forms that disagree."""
        o, w, c, whole = self.split_marked()
        name = "notes " + whole + ".pdf"
        kind = self.r.randrange(4)
        def pct(data):
            return "".join(chr(b) if b < 128 and (chr(b).isalnum() or chr(b) in "-.") else f"%{b:02X}" for b in data)
        k = self.cut(name)
        if kind == 0:
            cs = self.pick(["iso-8859-1", "windows-1252", "utf-8"])
            self.variant = f"continuations with a charset on every segment (utf-8, then {cs})"
            param = f"filename*0*=utf-8''{pct(name[:k].encode())};\n filename*1*={cs}''{pct(name[k:].encode(cs, 'replace'))}"
        elif kind == 1:
            self.variant = "continuations written out of order"
            param = f"filename*1*={pct(name[k:].encode())};\n filename*0*=utf-8''{pct(name[:k].encode())}"
        elif kind == 2:
            self.variant = "Content-Type name holds the span, Content-Disposition filename does not"
            param = "filename=\"notes.pdf\""
            part = (f"Content-Type: application/pdf; {self.rfc2231('name', name)}\nContent-Disposition: attachment; {param}\n"
                    "Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(b"%PDF-1.4\n%\x01\x02").decode())
            return self.anchored(part)
        else:
            self.variant = "plain and encoded continuations mixed (filename*0 / filename*1*)"
            param = f"filename*0=\"{name[:k]}\";\n filename*1*=utf-8''{pct(name[k:].encode())}"
        data = b"%PDF-1.4\n%" + bytes(self.r.randrange(256) for _ in range(40))
        body = base64.encodebytes(data).decode()
        part = (f"Content-Type: application/pdf\nContent-Disposition: attachment;\n {param}\nContent-Transfer-Encoding: base64\n\n" + body)
        return self.anchored(part)

    def c_nested_rfc822(self):
        """message/rfc822 inside message/rfc822, each with its own transfer encoding."""
        o, w, c, whole = self.split_marked()
        where = self.pick(["subject", "body", "html", "filename"])
        if where == "subject":
            inner_body = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 7bit\n\n" + self.filler() + "\n"
            subject = self.encoded_word("Re " + whole)
        elif where == "html":
            inner_body = self.leaf("text/html; charset=utf-8", ("<p>" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "</p>").encode())
            subject = "Inner"
        elif where == "filename":
            inner_body = self.leaf("application/octet-stream", b"\x00\x01binary", [f"Content-Disposition: attachment; {self.rfc2231('filename', 'n ' + whole + '.bin')}"], text_like=False)
            subject = "Inner"
        else:
            inner_body = self.text("Deep\n" + whole + "\n")
            subject = "Inner"
        innermost = f"From: Erin <erin@example.com>\nTo: carol@example.com\nSubject: {subject}\nMIME-Version: 1.0\n" + inner_body
        ctes = []
        message = innermost
        for level in range(self.r.randint(2, 3)):
            cte = self.pick(["base64", "quoted-printable", "7bit", "8bit"])
            data = message.encode("utf-8", "surrogateescape")
            if cte == "base64":
                encoded = base64.encodebytes(data).decode()
            elif cte == "quoted-printable":
                encoded = quopri.encodestring(data).decode()
            else:
                encoded = message
            ctes.append(cte)
            part = f"Content-Type: message/rfc822\nContent-Transfer-Encoding: {cte}\n\n" + encoded
            if level < 2:
                message = f"From: Carol <carol@example.com>\nTo: alice@example.org\nSubject: Fwd {level}\nMIME-Version: 1.0\n" + self.multipart("mixed", [self.text(self.filler() + "\n"), part])
        self.variant = f"the span in the innermost {where}; encodings outside in: {' / '.join(reversed(ctes))}"
        return self.anchored(part)

    def c_flowed(self):
        """format=flowed: a marker split across soft line breaks, DelSp deciding where the space goes."""
        o, w, c, whole = self.split_marked()
        delsp = self.chance(2)
        lines, at = [], 0
        while at < len(whole):
            k = self.r.randint(2, 6)
            lines.append(whole[at:at + k])
            at += k
        if delsp:
            text = " \n".join(lines) + "\n"
        else:
            # Without DelSp the space stays: cut only where the text has a space, else the marker gains one.
            text = whole.replace(" ", " \n") + "\n" if " " in w else " \n".join([o + w[:3], w[3:] + c]) + "\n"
        self.variant = f"format=flowed, delsp={'yes' if delsp else 'no'}"
        content = "Hello,\n" + self.filler() + "\n" + text + self.filler() + "\n"
        extra = "; format=flowed" + ("; delsp=yes" if delsp else self.pick(["", "; delsp=no"]))
        part = self.leaf("text/plain; charset=utf-8" + extra, content.encode(), cte=self.pick(["7bit", "8bit"]) if self.chance(2) else None)
        return self.anchored(part)

    def c_names(self):
        """What an attachment viewer shows: the file name, and a name that makes a text part something else."""
        o, w, c, whole = self.split_marked()
        kind = self.r.randrange(5)
        if kind == 0:
            ext = self.pick(["html", "htm", "svg", "xhtml"])
            self.variant = f"text/plain named .{ext}: opened in a browser"
            body = "<html><body><p>" + "".join(f"&#{ord(ch)};" if ch in "[]/" or self.chance(3) else ch for ch in whole) + "</p></body></html>\n"
            if ext in ("svg", "xhtml"):
                body = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text y=\"20\">" + "".join(f"&#x{ord(ch):x};" if ch in "[]" else ch for ch in whole) + "</text></svg>\n"
            part = self.leaf(f"text/plain; charset=utf-8; name=\"page.{ext}\"", body.encode(), [f"Content-Disposition: attachment; filename=\"page.{ext}\""])
        elif kind == 1:
            ext = self.pick(["md", "json", "rtf", "ics", "vcf", "eml"])
            self.variant = f"text/plain named .{ext}: opened by that viewer"
            if ext == "md":
                body = "# N\n\n" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "\n"
            elif ext == "json":
                body = "{\"n\": \"" + "".join(f"\\u{ord(ch):04x}" if ch in "[]/" or self.chance(3) else ch for ch in whole) + "\"}\n"
            elif ext == "rtf":
                body = "{\\rtf1\\ansi " + "".join(f"\\'{ord(ch):02x}" if ch in "[]" else ch for ch in whole) + "\\par}\n"
            elif ext == "ics":
                body = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:" + whole[:4] + "\r\n " + whole[4:] + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            elif ext == "vcf":
                body = "BEGIN:VCARD\r\nVERSION:2.1\r\nNOTE;ENCODING=QUOTED-PRINTABLE:" + "".join(f"={b:02X}" for b in whole.encode()) + "\r\nEND:VCARD\r\n"
            else:
                body = ("From: c@example.com\nSubject: =?utf-8?B?" + base64.b64encode(whole.encode()).decode() + "?=\nMIME-Version: 1.0\n"
                        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n" + base64.encodebytes(whole.encode()).decode())
            part = self.leaf(f"text/plain; charset=utf-8; name=\"notes.{ext}\"", body.encode(), [f"Content-Disposition: attachment; filename=\"notes.{ext}\""])
        elif kind == 2:
            self.variant = "Content-Type name .txt, Content-Disposition filename .html (readers pick either)"
            body = "<p>" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "</p>\n"
            first, second = "page.txt", "page.html"
            part = self.leaf(f"text/plain; charset=utf-8; name=\"{first}\"", body.encode(), [f"Content-Disposition: attachment; filename=\"{second}\""])
        elif kind == 3:
            self.variant = "the span in an attachment's file name as an encoded-word (not RFC 2231; Thunderbird decodes it)"
            name = self.encoded_word("notes " + whole + ".pdf")
            part = self.leaf(f"application/pdf; name=\"{name}\"", b"%PDF-1.4\n%\x01\x02", [f"Content-Disposition: attachment; filename=\"{name}\""], text_like=False)
        else:
            name = self.pick(["notes.html.", "notes.html ", "notes.ht\u200bml", "notes.HTML"])
            self.variant = f"a name a file system saves as .html ({name!r})"
            body = "<p>" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "</p>\n"
            part = self.leaf(f"text/plain; charset=utf-8; name=\"{name}\"", body.encode(), [f"Content-Disposition: attachment; {self.rfc2231('filename', name)}"])
        return self.anchored(part)

    def c_html_entities(self):
        """Character references an HTML5 parser decodes that a naive one does not."""
        o, w, c, whole = self.split_marked()
        named = {"[": ["&lsqb;", "&lbrack;", "&#x5B;", "&#X005b;", "&#0000091;"], "]": ["&rsqb;", "&rbrack;", "&#x5D;", "&#93;"],
                 "/": ["&sol;", "&#47;", "&#x2F;"]}
        kind = self.r.randrange(4)
        if kind == 0:
            self.variant = "named references (&lsqb; &rbrack; &sol;) for the marker's signs"
            text = "".join(self.pick(named[ch]) if ch in named else ch for ch in whole)
            inner = f"<p>{text}</p>"
        elif kind == 1:
            # The C1 code points HTML does not map to windows-1252 letters stay controls: shown as nothing.
            # (&#0; and &#x80; are not: U+FFFD and the euro sign break the marker in every reading.)
            self.variant = "references to C1 controls a browser shows as nothing"
            text = self.interleave(whole, lambda: self.pick(["&#x9d;", "&#x81;", "&#x8F;", "&#144;", "&#x8d;"]))
            inner = f"<p>{text}</p>"
        elif kind == 2:
            where = self.pick(["title", "alt", "value", "placeholder", "aria-label"])
            self.variant = f"references in a {where} attribute (shown as a tooltip, text or field)"
            text = "".join(self.pick(named[ch]) if ch in named else (f"&#{ord(ch)};" if self.chance(4) else ch) for ch in whole)
            inner = {"title": f"<p title=\"{text}\">note</p>", "alt": f"<img alt=\"{text}\" src=\"cid:x\">",
                     "value": f"<input value=\"{text}\">", "placeholder": f"<input placeholder=\"{text}\">",
                     "aria-label": f"<a aria-label=\"{text}\" href=\"https://example.org/\">link</a>"}[where]
        else:
            self.variant = "legacy references without ';' next to the span (&copy &amp &lt)"
            inner = "<p>&copy" + "".join(self.pick(named[ch]) if ch in named else ch for ch in whole) + "&amp&lt</p>"
        return self.anchored(self.html_part(self.html_doc(inner)))

    def c_invisible(self):
        """Zero-width, bidi and other default-ignorable characters inside a marker and the words."""
        o, w, c, whole = self.split_marked()
        chars = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069",
                 "\u034f", "\u180e", "\u061c", "\U000e0020", "\u115f", "\u3164", "\ufe0f"]
        ch = self.pick(chars)
        where = self.pick(["plain", "subject", "html", "filename"])
        self.variant = f"U+{ord(ch):04X} inside the marker and words, in the {where}"
        hidden = self.interleave(whole, lambda: ch)
        if where == "subject":
            return self.envelope(self.text("Hello,\n" + self.filler() + "\n"), subject=self.encoded_word("Plans " + hidden))
        if where == "html":
            return self.anchored(self.html_part(self.html_doc("<p>" + hidden + "</p>")))
        if where == "filename":
            part = self.leaf("application/pdf", b"%PDF-1.4\n%\x01", [f"Content-Disposition: attachment; {self.rfc2231('filename', 'n ' + hidden + '.pdf')}"], text_like=False)
            return self.anchored(part)
        return self.anchored(self.leaf("text/plain; charset=utf-8", ("Hello,\n" + hidden + "\n").encode()))

    def c_charset_lie(self):
        """A text part whose bytes are in another charset than it says."""
        o, w, c, whole = self.split_marked()
        text = "Hello,\n" + self.filler() + "\n" + whole + "\n"
        kind = self.pick(["utf-16 as latin-1", "utf-16 with BOM as utf-8", "utf-7 declared", "utf-7 as ascii", "ebcdic declared",
                          "utf-32 as utf-8", "iso-2022-jp escapes as ascii"])
        self.variant = f"{kind}"
        if kind == "utf-16 as latin-1":
            data, declared = text.encode(self.pick(["utf-16-le", "utf-16-be"])), "iso-8859-1"
        elif kind == "utf-16 with BOM as utf-8":
            data, declared = text.encode("utf-16"), "utf-8"
        elif kind == "utf-7 declared":
            data, declared = text.encode("utf-7"), "utf-7"
        elif kind == "utf-7 as ascii":
            data, declared = text.encode("utf-7"), "us-ascii"
        elif kind == "ebcdic declared":
            data, declared = text.encode("cp500"), self.pick(["ibm500", "cp500", "ebcdic-cp-be"])
        elif kind == "utf-32 as utf-8":
            data, declared = text.encode("utf-32"), "utf-8"
        else:
            # ISO-2022-JP has no Latin-1 letters (the filler may hold "ü"): those become "?", the span is ASCII.
            data, declared = text.encode("iso-2022-jp", errors="replace"), "us-ascii"
            # Latin letters in ISO-2022-JP are ASCII: switch to JIS Roman and back around the span so a decoder has work.
            data = data.replace(whole.encode(), b"\x1b(J" + whole.encode() + b"\x1b(B")
        return self.anchored(self.leaf(f"text/plain; charset={declared}", data, text_like=False, cte=None))

    def c_structured_text(self):
        """text/* subtypes whose viewers decode escapes: not plain text, whatever the text/ says."""
        o, w, c, whole = self.split_marked()
        kind = self.pick(["text/xml", "text/csv", "text/x-markdown", "text/tab-separated-values", "text/x-vcalendar", "text/directory",
                          "text/plain; format=fixed", "text/troff"])
        self.variant = kind
        if kind == "text/xml":
            body = "<?xml version=\"1.0\"?><!DOCTYPE n [<!ENTITY s \"" + whole + "\">]><n>&s;</n>\n"
        elif kind in ("text/csv", "text/tab-separated-values"):
            k = self.cut(whole)
            body = f"a,b\n=CONCATENATE(\"{whole[:k]}\",\"{whole[k:]}\"),x\n"
        elif kind == "text/x-markdown":
            body = "# N\n\n" + "".join(f"&#{ord(ch)};" if ch in "[]" else ch for ch in whole) + "\n"
        elif kind in ("text/x-vcalendar", "text/directory"):
            body = "BEGIN:VCARD\r\nVERSION:2.1\r\nNOTE;ENCODING=QUOTED-PRINTABLE:" + "".join(f"={b:02X}" for b in whole.encode()) + "\r\nEND:VCARD\r\n"
        elif kind == "text/troff":
            body = ".TH N 1\n" + "".join("\\(lB" if ch == "[" else "\\(rB" if ch == "]" else ch for ch in whole) + "\n"
        else:
            body = "Notes\n" + whole + "\n"
        return self.anchored(self.leaf(kind + ("; charset=utf-8" if ";" not in kind else ""), body.encode()))

    # nesting: a random tree with random encodings, charsets and header forms
    def encoded_word(self, text):
        charset = self.charset_for(text)
        data = text.encode(charset)
        if self.chance(2):
            return f"=?{charset}?B?{base64.b64encode(data).decode()}?="
        return f"=?{charset}?Q?" + "".join(chr(b) if b < 128 and chr(b).isalnum() else f"={b:02X}" for b in data) + "?="

    def rfc2231(self, name, value):
        data = value.encode("utf-8")
        encoded = "".join(chr(b) if b < 128 and (chr(b).isalnum() or chr(b) in "-.") else f"%{b:02X}" for b in data)
        if self.chance(2) or len(encoded) < 12:
            return f"{name}*=utf-8''{encoded}"
        pieces, at = [], 0
        while at < len(encoded):
            k = self.r.randint(6, 14)
            while at + k < len(encoded) and "%" in encoded[at + k - 2:at + k]:
                k += 1
            pieces.append(encoded[at:at + k])
            at += k
        return ";\n ".join(f"{name}*{i}*=" + (f"utf-8''{p}" if i == 0 else p) for i, p in enumerate(pieces))

    def tree(self, depth):
        if depth <= 0 or self.chance(3):
            kind = self.r.randrange(5)
            if kind == 0:
                name = "note " + self.span() + ".txt"
                param = self.rfc2231("filename", name) if self.chance(2) else f"filename=\"{self.encoded_word(name)}\""
                data = self.prose().encode(self.pick(["utf-8", "utf-16"]))
                return self.leaf("application/octet-stream", data, [f"Content-Disposition: attachment;\n {param}"], text_like=False)
            if kind == 1:
                return self.html_part(self.html_doc("<p>" + self.prose().replace("\n", "<br>") + "</p>"))
            headers = [f"Content-Description: {self.encoded_word('part ' + self.span())}"] if self.chance(3) else []
            return self.text(self.prose(spans=self.r.randint(1, 2)), headers=headers,
                             extra=self.pick(["", "", "; format=flowed", "; format=flowed; delsp=yes"]))
        kind = self.pick(["mixed", "alternative", "related", "mixed", "rfc822", "global", "digest"])
        if kind in ("rfc822", "global"):
            subject = self.encoded_word("Fwd " + self.span()) if kind == "rfc822" else "Weitergeleitet " + self.span()
            inner = (f"From: {self.encoded_word('Carol ' + self.filler())} <carol@example.com>\nTo: alice@example.org\nSubject: {subject}\n"
                     "MIME-Version: 1.0\n" + self.tree(depth - 1))
            cte = self.pick(["7bit", "8bit", "8bit", "base64", "quoted-printable"])
            data = inner.encode("utf-8", "surrogateescape")
            if cte in ("base64", "quoted-printable"):
                return self.leaf(f"message/{kind}", data, text_like=False, cte=None) if False else \
                    "Content-Type: message/" + kind + "\nContent-Transfer-Encoding: " + cte + "\n\n" + \
                    (base64.encodebytes(data).decode() if cte == "base64" else quopri.encodestring(data).decode()) + "\n"
            return f"Content-Type: message/{kind}\nContent-Transfer-Encoding: {cte}\n\n" + inner
        if kind == "digest":
            children = ["\n" + f"Subject: {self.encoded_word('Digest ' + self.span())}\nMIME-Version: 1.0\n" + self.text(self.prose())
                        for _ in range(self.r.randint(1, 3))]
            return self.multipart("digest", children)
        return self.multipart(kind, [self.tree(depth - 1) for _ in range(self.r.randint(1, 3))],
                              extra="; type=\"text/html\"" if kind == "related" else "")

    def c_nesting(self):
        depth = self.r.randint(1, 5)
        self.variant = f"random tree of depth up to {depth}"
        subject = self.encoded_word("Plans " + self.span()) if self.chance(2) else ""
        return self.envelope(self.tree(depth), subject=subject)


def yenc(data, name):
    out, line = [], ""
    for b in data:
        v = (b + 42) % 256
        if v in (0, 10, 13, 61) or (v in (9, 32) and not line) or (v == 46 and not line):
            line += "=" + chr((v + 64) % 256)
        else:
            line += chr(v)
        if len(line) >= 128:
            out.append(line)
            line = ""
    out.append(line)
    crc = zlib.crc32(data) & 0xFFFFFFFF
    return f"=ybegin line=128 size={len(data)} name={name}\n" + "\n".join(out) + f"\n=yend size={len(data)} crc32={crc:08x}\n"


def crc_binhex(data, crc=0):
    for b in data:
        for i in range(8):
            c = crc & 0x8000
            crc = ((crc << 1) | ((b >> (7 - i)) & 1)) & 0xFFFF
            if c:
                crc ^= 0x1021
    return crc


def _with_crc(data):
    crc = crc_binhex(data + b"\0\0")
    return data + crc.to_bytes(2, "big")


def binhex4(data, name):
    """BinHex 4.0: header, data fork, empty resource fork, each with its CRC; 0x90 escaped; the 6-bit alphabet."""
    header = bytes([len(name)]) + name.encode() + b"\0" + b"TEXT" + b"ttxt" + b"\0\0" + len(data).to_bytes(4, "big") + (0).to_bytes(4, "big")
    raw = _with_crc(header) + _with_crc(data) + _with_crc(b"")
    raw = raw.replace(b"\x90", b"\x90\x00")
    alphabet = "!\"#$%&'()*+,-012345689@ABCDEFGHIJKLMNPQRSTUVXYZ[`abcdefhijklmpqr"
    bits, count, out = 0, 0, []
    for b in raw:
        bits = (bits << 8) | b
        count += 8
        while count >= 6:
            count -= 6
            out.append(alphabet[(bits >> count) & 63])
    if count:
        out.append(alphabet[(bits << (6 - count)) & 63])
    text = ":" + "".join(out) + ":"
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    return "(This file must be converted with BinHex 4.0)\n" + "\n".join(lines) + "\n"


def pdf_with_text(text):
    stream = zlib.compress(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1", "replace"))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n" + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode() + b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


CLASSES = {
    "html-parse": ("HTML as a browser parses it", Gen.c_html_parse),
    "css-text": ("text built by CSS", Gen.c_css_text),
    "data-srcdoc": ("data: and srcdoc, nested", Gen.c_data_srcdoc),
    "xml-dtd": ("XHTML internal DTD entities", Gen.c_xml_dtd),
    "json": ("JSON \\u escapes", Gen.c_json),
    "rtf": ("RTF \\'xx and \\uN", Gen.c_rtf),
    "vcard": ("vCard 2.1 quoted-printable", Gen.c_vcard),
    "icalendar": ("iCalendar X-ALT-DESC etc.", Gen.c_icalendar),
    "enriched": ("text/enriched <param>", Gen.c_enriched),
    "markdown": ("Markdown escapes", Gen.c_markdown),
    "inline-binary": ("inline uuencode/yEnc/BinHex", Gen.c_inline_binary),
    "terminal": ("overstrike and ANSI escapes", Gen.c_terminal),
    "controls": ("NUL, C0 and C1 controls", Gen.c_controls),
    "octet": ("readable files as octet-stream", Gen.c_octet_attachments),
    "archives": ("zip/docx/odt/gzip/PDF", Gen.c_archives),
    "openpgp-plain": ("OpenPGP not encrypted", Gen.c_openpgp_plain),
    "smime-signed": ("S/MIME signed-data", Gen.c_smime_signed),
    "bare-cr": ("bare CR line ends", Gen.c_bare_cr),
    "nesting": ("nesting, encodings, charsets", Gen.c_nesting),
    "qp-split": ("QP soft breaks in a marker", Gen.c_qp_split),
    "rfc2231-mixed": ("RFC 2231 continuations", Gen.c_rfc2231_mixed),
    "nested-rfc822": ("message in message, CTEs", Gen.c_nested_rfc822),
    "flowed": ("format=flowed DelSp", Gen.c_flowed),
    "names": ("file names viewers use", Gen.c_names),
    "html-entities": ("HTML5 references", Gen.c_html_entities),
    "invisible": ("zero-width and bidi", Gen.c_invisible),
    "charset-lie": ("bytes in another charset", Gen.c_charset_lie),
    "structured": ("text/* that is not plain", Gen.c_structured_text),
}


def make(cls, seed, marked, tools):
    gen = Gen(seed, marked, tools)
    mail = CLASSES[cls][1](gen)
    if not marked:
        gen.signed = False
    data = mail.encode("utf-8", "surrogateescape")
    return Sample(cls, seed, marked, gen.variant, data, gen.tokens, gen.signed)


def self_check(count, seed=None):
    """Makes `count` mails and controls of every class from fresh seeds: a generator that cannot
    make one of its variants (a charset that cannot hold a filler word) fails here, named with its
    seed, rather than as a traceback halfway through an adversarial run."""
    seed = int.from_bytes(os.urandom(6), "big") if seed is None else seed
    rng, tools, failures = random.Random(seed), Tools(), []
    try:
        for cls in CLASSES:
            for _ in range(count):
                one = rng.getrandbits(48)
                for marked in (True, False):
                    try:
                        make(cls, one, marked, tools)
                    except Exception as error:  # every kind of generator failure is the finding
                        failures.append(f"{cls}:{one}{'' if marked else ':control'} {type(error).__name__}: {error}")
    finally:
        tools.close()
    print(f"hostile-classes: seed {seed}, {count} seeds x {len(CLASSES)} classes, {len(failures)} failed")
    for line in failures[:20]:
        print("  " + line)
    return not failures


if __name__ == "__main__":
    import argparse
    import sys
    parser = argparse.ArgumentParser(description="Checks that every class's generator makes its mails.")
    parser.add_argument("--self-check", type=int, required=True, metavar="N")
    parser.add_argument("--seed", type=int, default=None)
    arguments = parser.parse_args()
    sys.exit(0 if self_check(arguments.self_check, arguments.seed) else 1)
