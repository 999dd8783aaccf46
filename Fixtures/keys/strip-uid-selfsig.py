#!/usr/bin/env python3
"""Drops the self-signature that follows each user ID packet of a binary
OpenPGP key (stdin to stdout). GnuPG then imports the key only with
--allow-non-selfsigned-uid and lists it as invalid: the fixture for the
"invalid" look-up verdict."""
import sys

data = sys.stdin.buffer.read()
out = bytearray()
i = 0
previous = None
while i < len(data):
    header = data[i]
    if not header & 0x80:
        sys.exit("not an OpenPGP packet stream")
    if header & 0x40:  # new packet format
        tag = header & 0x3F
        first = data[i + 1]
        if first < 192:
            header_len, body_len = 2, first
        elif first < 224:
            header_len, body_len = 3, ((first - 192) << 8) + data[i + 2] + 192
        else:
            header_len, body_len = 6, int.from_bytes(data[i + 2:i + 6], "big")
    else:  # old packet format
        tag = (header >> 2) & 0x0F
        size = {0: 1, 1: 2, 2: 4}[header & 3]
        header_len, body_len = 1 + size, int.from_bytes(data[i + 1:i + 1 + size], "big")
    packet = data[i:i + header_len + body_len]
    i += header_len + body_len
    if tag == 2 and previous == 13:  # signature right after a user ID
        previous = tag
        continue
    out += packet
    previous = tag
sys.stdout.buffer.write(out)
