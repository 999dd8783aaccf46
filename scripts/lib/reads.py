#!/usr/bin/env python3
"""reads.py FILE [--subject S] [--has TEXT]... [--lacks WORD]...

Checks a delivered mail as a recipient's program reads it (Python's email,
policy.default): every header field's decoded value and every text part's
decoded content. Header fields that hold random material (Received with
Postfix's queue IDs, X-Mailsec-Copy's digest, Content-Type's boundary) are
left out: a span's digits such as "4711" turn up in random hex about once in
800 mails, which made the old grep of the raw file fail by chance.

--subject S   the Subject, decoded, is exactly S
--has TEXT    TEXT is in a text part (case-sensitive)
--lacks WORD  WORD is in no header field, no text part and no other part's
              decoded bytes (case-insensitive)

Exit 0 when every condition holds; otherwise 1, with one line per failed
condition on stderr, so a red run says why.
"""
import argparse
import email
import email.policy
import sys

RANDOM_FIELDS = {"received", "x-mailsec-copy", "content-type"}

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--subject")
ap.add_argument("--has", action="append", default=[])
ap.add_argument("--lacks", action="append", default=[])
a = ap.parse_args()

try:
    with open(a.file, "rb") as f:
        m = email.message_from_binary_file(f, policy=email.policy.default)
except OSError as e:
    print("  cannot read %r: %s" % (a.file, e.strerror), file=sys.stderr)
    sys.exit(1)
fields = [str(v) for p in m.walk() for k, v in p.items() if k.lower() not in RANDOM_FIELDS]
bodies, others = [], []
for p in m.walk():
    if p.is_multipart():
        continue
    if p.get_content_maintype() != "text":
        others.append((p.get_payload(decode=True) or b"").decode("utf-8", "replace"))
    else:
        try:
            bodies.append(p.get_content())
        except (LookupError, UnicodeError):
            bodies.append((p.get_payload(decode=True) or b"").decode("utf-8", "replace"))

ok = True
def fail(why):
    global ok
    print("  " + why, file=sys.stderr)
    ok = False

if a.subject is not None and str(m["Subject"]) != a.subject:
    fail("the Subject is %r, not %r" % (str(m["Subject"]), a.subject))
for text in a.has:
    if not any(text in b for b in bodies):
        fail("no text part has %r" % text)
for word in a.lacks:
    if any(word.lower() in t.lower() for t in fields + bodies + others):
        fail("%r is in a header field or a part" % word)
sys.exit(0 if ok else 1)
