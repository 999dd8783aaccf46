#!/usr/bin/env python3
# Builds an mbox of about TARGET bytes from the messages under ROOT (repeated), for scripts/bench.
#   make-mbox.py ROOT TARGET OUT
import os, re, sys
root, target, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
msgs = []
for d, _, fs in sorted(os.walk(root)):
    for f in sorted(fs):
        if 'mbox' in f or f.endswith(('.asc', '.tsv', '.key', '.md', '.gpg')):
            continue
        data = open(os.path.join(d, f), 'rb').read().replace(b'\r\n', b'\n')
        # Whole messages only: a header line first, a header/body break.
        if not re.match(rb'[A-Za-z][A-Za-z0-9-]*:', data) or b'\n\n' not in data:
            continue
        data = re.sub(rb'(?m)^From ', b'>From ', data)
        if not data.endswith(b'\n'):
            data += b'\n'
        msgs.append(b'From bench@example.org Sat Jan  1 00:00:00 2000\n' + data + b'\n')
one = b''.join(msgs)
out = bytearray()
while len(out) < target:
    out += one
open(out_path, 'wb').write(out)
print(len(msgs), len(out))
