#!/usr/bin/env python3
"""A loopback SMTP relay that can hold a session at a chosen point, for the
end-to-end tests: it makes "kill the filter during a mail" certain.

    smtp-gate.py LISTEN_PORT TARGET_PORT GATE_FILE

Relays every connection on 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT and
prints "listening" once bound. While GATE_FILE exists and holds a point and a
count ("mail 2", "dot 1", "reply 1"), the COUNT-th such event since the file was
written is held: the relay creates GATE_FILE.held and waits until GATE_FILE is
removed.
  mail   before passing on a MAIL FROM (between two copies)
  dot    before passing on the "." that ends a message
  reply  after passing on the ".", before passing back the server's reply to it
A client that goes away while held (killed) is never completed on its behalf:
its session to the server is dropped as it is, mid-message, as without the relay.
A copy the server took ("250 ... queued as ID") whose client went away after its
"." without another command (killed before it could record the copy as handed on,
with the reply on its way or not yet sent: RFC 1047's window) is written to
GATE_FILE.unconfirmed, one queue ID a line.
SIGUSR1 ends every open session (as a server restarted in between would): a client
that keeps sessions open between mails then has to open new ones.
"""
import os
import re
import select
import signal
import socket
import sys
import threading
import time

listen_port, target_port, gate = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
counts = {}  # (gate file identity, point) -> events seen
servers = set()  # the open sessions' server sockets


def gone(sock):
    """True when the peer of `sock` closed its side (or reset it)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except OSError:
        return True


def hold(point, client):
    """Holds the session when the gate asks for this event; False when the client went away meanwhile."""
    try:
        status = os.stat(gate)
        with open(gate) as f:
            wanted = f.read().split()
    except OSError:
        return True
    if len(wanted) != 2 or wanted[0] != point:
        return True
    key = (status.st_ino, status.st_mtime_ns, point)
    with lock:
        counts[key] = counts.get(key, 0) + 1
        if counts[key] != int(wanted[1]):
            return True
    open(gate + ".held", "w").close()
    while os.path.exists(gate):
        if point != "reply" and gone(client):
            return False
        time.sleep(0.02)
    return not gone(client) if point != "reply" else True


def session(client):
    try:
        server = socket.create_connection(("127.0.0.1", target_port), timeout=120)
        server.settimeout(None)
    except OSError:
        client.close()
        return
    state = {"data": False, "dot": False, "unconfirmed": None, "replied": threading.Event()}
    with lock:
        servers.add(server)

    def down():  # server -> client
        try:
            for line in server.makefile("rb"):
                if state["dot"]:
                    state["dot"] = False
                    hold("reply", client)
                    queued = re.search(rb"^250 .*queued as ([0-9A-Za-z]+)", line)
                    state["unconfirmed"] = queued.group(1).decode() if queued else None
                    state["replied"].set()
                if line.startswith(b"354"):
                    state["data"] = True
                client.sendall(line)
        except OSError:
            pass
        for sock in (client, server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    threading.Thread(target=down, daemon=True).start()
    try:
        for line in client.makefile("rb"):  # client -> server
            state["unconfirmed"] = None  # a command after the reply: the client had it
            if state["data"]:
                if line == b".\r\n":
                    if not hold("dot", client):
                        break
                    state["data"] = False
                    state["replied"].clear()
                    state["dot"] = True
            elif line[:5].upper() == b"MAIL ":
                if not hold("mail", client):
                    break
            server.sendall(line)
    except OSError:
        pass
    if state["dot"]:  # the client went away after its ".": the server may take the copy still
        state["replied"].wait(60)
    try:
        server.shutdown(socket.SHUT_RDWR)  # mid-message: the server drops what it had
    except OSError:
        pass
    with lock:
        servers.discard(server)
        if state["unconfirmed"]:
            with open(gate + ".unconfirmed", "a") as f:
                f.write(state["unconfirmed"] + "\n")
    client.close()
    server.close()


def end_all(*_):
    with lock:
        for server in servers:
            try:
                server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


signal.signal(signal.SIGUSR1, end_all)
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(64)
print("listening", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=session, args=(connection,), daemon=True).start()
