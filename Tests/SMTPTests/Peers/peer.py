#!/usr/bin/env python3
"""A scripted SMTP server for the SMTP client's tests: the shapes a real
Postfix will not produce on demand (no STARTTLS, one recipient refused,
a server that stalls, no 8BITMIME, text injected after "220 ready").

Listens on 127.0.0.1 (port 0), prints the port on stdout, serves one
connection after another until killed, and appends every line the client
sent (AUTH lines included, to check them) and every message received to the
log file named by --log, as JSON lines.
"""
import argparse, base64, json, signal, socket, ssl, sys, threading, time

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # it may come to us ignored

p = argparse.ArgumentParser()
p.add_argument("--log", required=True)
p.add_argument("--cert"); p.add_argument("--key")
p.add_argument("--implicit-tls", action="store_true")
p.add_argument("--no-starttls", action="store_true")
p.add_argument("--no-8bitmime", action="store_true")
p.add_argument("--no-pipelining", action="store_true")
p.add_argument("--size", type=int, default=0)
p.add_argument("--auth", default="", help="user:password accepted by AUTH PLAIN/LOGIN")
p.add_argument("--rcpt", action="append", default=[], help="ADDRESS=CODE, e.g. bob@x=550")
p.add_argument("--final", type=int, default=250, help="the reply to the final dot")
p.add_argument("--final-delay", type=float, default=0, help="seconds before that reply")
p.add_argument("--mail-reply", type=int, default=250)
p.add_argument("--stall", default="", help="greeting|ehlo|mail|rcpt|data|final: never answer there")
p.add_argument("--inject-after-starttls", action="store_true",
               help="send '250 injected' right after 220 ready, in the same segment")
p.add_argument("--greeting", default="220 peer.test ESMTP")
args = p.parse_args()

rcpt_codes = dict(item.rsplit("=", 1) for item in args.rcpt)
lock = threading.Lock()

def log(entry):
    with lock, open(args.log, "a") as f:
        f.write(json.dumps(entry) + "\n")

def tls_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    return ctx

class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.tls = False

    def send(self, text):
        self.sock.sendall(text.encode() + b"\r\n")

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.rstrip(b"\r")

def stall():
    time.sleep(3600)

def serve(sock):
    c = Conn(sock)
    if args.implicit_tls:
        c.sock = tls_context().wrap_socket(sock, server_side=True)
        c.tls = True
    if args.stall == "greeting": stall()
    c.send(args.greeting)
    mail_from, rcpts = None, []
    while True:
        raw = c.line()
        text = raw.decode("utf-8", "replace")
        log({"tls": c.tls, "line": text})
        verb = text.split(" ", 1)[0].upper()
        if verb == "EHLO":
            if args.stall == "ehlo": stall()
            ext = ["peer.test"]
            if not args.no_8bitmime: ext.append("8BITMIME")
            if not args.no_pipelining: ext.append("PIPELINING")
            ext.append("SIZE %d" % args.size)
            ext.append("SMTPUTF8")
            if args.cert and not c.tls and not args.no_starttls: ext.append("STARTTLS")
            if args.auth: ext.append("AUTH PLAIN LOGIN")
            for i, e in enumerate(ext):
                c.send(("250 " if i == len(ext) - 1 else "250-") + e)
        elif verb == "HELO":
            c.send("250 peer.test")
        elif verb == "STARTTLS":
            if args.inject_after_starttls:
                c.sock.sendall(b"220 ready\r\n250 injected\r\n")
            else:
                c.send("220 ready")
            c.sock = tls_context().wrap_socket(c.sock, server_side=True)
            c.tls = True
            c.buf = b""
        elif verb == "AUTH":
            parts = text.split(" ")
            user, password = args.auth.split(":", 1)
            ok = False
            if parts[1].upper() == "PLAIN":
                given = base64.b64decode(parts[2]).split(b"\0")
                ok = given[1:] == [user.encode(), password.encode()]
            elif parts[1].upper() == "LOGIN":
                c.send("334 VXNlcm5hbWU6"); u = base64.b64decode(c.line()); log({"tls": c.tls, "line": "(login user)"})
                c.send("334 UGFzc3dvcmQ6"); pw = base64.b64decode(c.line()); log({"tls": c.tls, "line": "(login password)"})
                ok = (u, pw) == (user.encode(), password.encode())
            c.send("235 2.7.0 ok" if ok else "535 5.7.8 authentication failed")
        elif verb == "MAIL":
            if args.stall == "mail": stall()
            ok = args.mail_reply == 250
            mail_from, rcpts = (text if ok else None), []
            c.send("250 2.1.0 ok" if ok else "%d mail refused" % args.mail_reply)
        elif verb == "RCPT":
            if args.stall == "rcpt": stall()
            if mail_from is None:
                c.send("503 5.5.1 need MAIL first"); continue
            address = text[text.index("<") + 1:text.rindex(">")]
            code = int(rcpt_codes.get(address, 250))
            if code < 300: rcpts.append(address)
            c.send("%d %s" % (code, "2.1.5 ok" if code < 300 else "5.1.1 <%s>: no such user\x1b[31m" % address if code >= 500 else "4.2.0 try later"))
        elif verb == "DATA":
            if args.stall == "data": stall()
            if not rcpts or mail_from is None:
                c.send("554 5.5.1 no valid recipients"); continue
            c.send("354 go ahead")
            lines = []
            while True:
                l = c.line()
                if l == b".": break
                lines.append(l)
            log({"tls": c.tls, "message": base64.b64encode(b"\r\n".join(lines) + b"\r\n").decode(),
                 "from": mail_from, "rcpts": rcpts})
            if args.stall == "final": stall()
            time.sleep(args.final_delay)
            c.send("%d %s" % (args.final, "2.0.0 queued" if args.final < 300 else "message refused"))
            mail_from, rcpts = None, []
        elif verb == "RSET":
            mail_from, rcpts = None, []
            c.send("250 ok")
        elif verb == "QUIT":
            c.send("221 bye"); return
        else:
            c.send("502 5.5.2 unknown command")

def handle(sock):
    try:
        serve(sock)
    except (EOFError, OSError, ssl.SSLError) as e:
        log({"closed": str(e)[:200]})
    finally:
        try: sock.close()
        except OSError: pass

server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
print(server.getsockname()[1], flush=True)
while True:
    s, _ = server.accept()
    threading.Thread(target=handle, args=(s,), daemon=True).start()
