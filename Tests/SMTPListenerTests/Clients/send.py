#!/usr/bin/env python3
"""Sends mails with Python's smtplib (SMTP or LMTP) to a listener and prints
what came back, as JSON: one entry per mail, the replies after DATA.

usage: send.py PORT smtp|lmtp SENDER RCPT[,RCPT...] FILE...
Each FILE's bytes are one mail (CRLF lines; smtplib dot-stuffs them)."""
import json
import smtplib
import sys

port, mode, sender, rcpts = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].split(",")
files = sys.argv[5:]
client = smtplib.LMTP("127.0.0.1", port) if mode == "lmtp" else smtplib.SMTP("127.0.0.1", port)
code, _ = client.ehlo("client.invalid")
features = sorted(client.esmtp_features)
results = []
for name in files:
    with open(name, "rb") as f:
        message = f.read()
    options = ["BODY=8BITMIME", "SMTPUTF8", "SIZE=%d" % len(message)]
    code, text = client.mail(sender, options)
    assert code == 250, (code, text)
    accepted = []
    for r in rcpts:
        code, text = client.rcpt(r)
        if code == 250:
            accepted.append(r)
    code, text = client.data(message)
    replies = [[code, text.decode()]]
    if mode == "lmtp":
        for _ in accepted[1:]:
            code, text = client.getreply()
            replies.append([code, text.decode()])
    results.append(replies)
code, text = client.noop()
results.append([[code, text.decode()]])
client.quit()
print(json.dumps({"features": features, "results": results}))
