#!/usr/bin/env python3
"""Sends one mail many times to an SMTP server (the resident filter) and times each.

    smtp-load.py PORT MAIL COUNT CONNECTIONS [PID] -- SENDER RCPT...

Each of CONNECTIONS keeps one SMTP session open and sends its share of COUNT
mails one after the other (MAIL, RCPT, DATA, the server's 250), each with a
Message-ID of its own. With PID, the resident set of that process is sampled
every 20 ms. Prints JSON: the median seconds from MAIL to the final reply,
mails sent, mails refused, the largest and the last resident set (KiB).
"""
import json
import smtplib
import statistics
import sys
import threading
import time

args = sys.argv[1:]
split = args.index("--")
port, mail, count, connections = int(args[0]), args[1], int(args[2]), int(args[3])
pid = int(args[4]) if split > 4 else None
sender, recipients = args[split + 1], args[split + 2:]
template = open(mail, "rb").read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
latencies, refused, lock = [], [0], threading.Lock()


def rss():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def worker(first, number):
    with smtplib.SMTP("127.0.0.1", port, timeout=300) as session:
        session.ehlo("bench.example")
        for n in range(first, first + number):
            body = template.replace(b"Message-ID: <", b"Message-ID: <%d." % n, 1)
            start = time.perf_counter()
            try:
                session.sendmail(sender, recipients, body)
                ok = True
            except smtplib.SMTPException:
                ok = False
                session.rset()
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                refused[0] += 0 if ok else 1


peak, done = [0], threading.Event()


def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.02)


if pid:
    threading.Thread(target=sample, daemon=True).start()
share = [count // connections + (1 if i < count % connections else 0) for i in range(connections)]
threads = [threading.Thread(target=worker, args=(sum(share[:i]), share[i])) for i in range(connections)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
done.set()
print(json.dumps({"median": statistics.median(latencies), "mails": len(latencies), "refused": refused[0],
                  "rss_max_kib": max(peak[0], rss()) if pid else 0, "rss_end_kib": rss() if pid else 0}))
