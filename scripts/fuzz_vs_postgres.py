#!/usr/bin/env python3
"""Send the protocol fuzzer's cases to PostgreSQL 15 and to ferrogres; group
the first difference of each pair of replies.

A tool for finding protocol behaviour that differs from PostgreSQL's, not a
test (it is never run by scripts/test.sh). Steps:

  1. Dump cases:  FERROGRES_FUZZ_DUMP=/tmp/dump FERROGRES_FUZZ_CASES=3000 \\
                  cargo test -p ferrogres --test protocol_fuzz
  2. Start a PostgreSQL 15 and a ferrogres, and run the fuzzer's SETUP SQL
     (the `SETUP` constant in crates/ferrogres/tests/protocol_fuzz.rs) in both.
  3. scripts/fuzz_vs_postgres.py /tmp/dump PGHOST PGPORT FGHOST FGPORT
     (a host starting with / is a Unix socket directory).

Replies are compared as sequences of message types, with ErrorResponses as
severity:SQLSTATE:message; ParameterStatus, BackendKeyData and NoticeResponse
are left out. Expect noise: PostgreSQL drops output it had buffered when a
client leaves (EOF, Terminate), logs rather than sends some framing errors, and
table contents drift apart as cases write to them.
"""
import collections
import glob
import os
import re
import socket
import struct
import sys

SSL, GSS = struct.pack('!i', 80877103), struct.pack('!i', 80877104)


def connect(host, port):
    if host.startswith('/'):
        s = socket.socket(socket.AF_UNIX)
        s.connect(f'{host}/.s.PGSQL.{port}')
    else:
        s = socket.create_connection((host, port))
    s.settimeout(5)
    return s


def run(host, port, data):
    """Send a case as the fuzzer does (waiting for the answer to each leading
    encryption request), then read until the server hangs up."""
    s = connect(host, port)
    i, k, out = 0, 0, b''
    try:
        while len(data) >= i + 8 and data[i:i + 4] == b'\0\0\0\x08' and data[i + 4:i + 8] in (SSL, GSS):
            s.sendall(data[i:i + 8])
            i, k = i + 8, k + 1
            while len(out) < k:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        s.sendall(data[i:])
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        out += b'<reset or timeout>'
    return out


def norm(out):
    res, i = [], 0
    while i < len(out) and out[i:i + 1] == b'N' and (len(out) < i + 5 or struct.unpack('!I', out[i + 1:i + 5])[0] > 0xffff):
        res.append('n(encryption refused)')
        i += 1
    while i + 5 <= len(out):
        t = out[i:i + 1]
        n = struct.unpack('!i', out[i + 1:i + 5])[0]
        if n < 4:
            res.append('?')
            break
        body = out[i + 5:i + 1 + n]
        if t == b'E':
            f = {chr(x[0]): x[1:].decode(errors='replace') for x in body.split(b'\0') if x}
            res.append('E:%s:%s:%s' % (f.get('S'), f.get('C'), f.get('M', '')[:60]))
        elif t not in (b'S', b'K', b'N'):
            res.append(t.decode('latin1'))
        i += 1 + n
    if out.endswith(b'<reset or timeout>'):
        res.append('RESET/TIMEOUT')
    return res


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    cases, pg_host, pg_port, fg_host, fg_port = sys.argv[1:]
    buckets = collections.defaultdict(list)
    files = sorted(glob.glob(os.path.join(cases, '*.bin')))
    for f in files:
        data = open(f, 'rb').read()
        a, b = norm(run(pg_host, int(pg_port), data)), norm(run(fg_host, int(fg_port), data))
        if a == b:
            continue
        k = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
        key = (re.sub(r'\d+', '#', a[k] if k < len(a) else 'END')[:70], re.sub(r'\d+', '#', b[k] if k < len(b) else 'END')[:70])
        buckets[key].append(os.path.basename(f))
    for (pg, fg), fs in sorted(buckets.items(), key=lambda x: -len(x[1])):
        print(f'{len(fs):5}  PostgreSQL {pg!r}  ferrogres {fg!r}  e.g. {fs[:2]}')
    print(f'{len(files)} cases, {sum(len(v) for v in buckets.values())} differ')


if __name__ == '__main__':
    main()
