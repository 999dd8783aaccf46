#!/usr/bin/env python3
"""A token introspection endpoint (RFC 7662) for Dovecot's oauth2 passdb in
scripts/lib/mailsystem.sh: POST token=... answers {"active": true, "username": USER}
for the one token in TOKEN-FILE and {"active": false} for any other. Each token it was
asked about is appended to LOG-FILE, so a test can see what reached the server.
Listens on 127.0.0.1:PORT until killed.
    introspect.py PORT TOKEN-FILE USER LOG-FILE"""
import http.server
import json
import sys
import urllib.parse

port, token_file, user, log_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


class Introspection(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode("ascii", "replace"))
        token = (form.get("token") or [""])[0]
        with open(token_file) as f:
            valid = f.read().strip()
        with open(log_file, "a") as f:
            f.write(token + "\n")
        answer = {"active": True, "username": user} if token and token == valid else {"active": False}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Introspection).serve_forever()
