#!/usr/bin/env python3
"""A second client for the authentication tests (crates/ferrogres/tests/auth.rs):
the PostgreSQL v3 startup and password exchanges written from the protocol
documentation with Python's standard library (hashlib's PBKDF2, hmac, md5),
independent of libpq and of the server's own code.

usage: auth_client.py HOST PORT USER DATABASE PASSWORD|-  [SQL]
HOST starting with '/' is a Unix socket directory. Prints one line:
  OK <method> <first column of SQL's first row>
  ERROR <SQLSTATE> <message>
  EOF
and exits 0 (the caller checks the line). '-' sends no password (closes when asked).
"""
import base64
import hashlib
import hmac
import os
import socket
import struct
import sys


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def read_msg(s):
    t = recv_exact(s, 1)
    (n,) = struct.unpack("!i", recv_exact(s, 4))
    return t, recv_exact(s, n - 4)


def send(s, t, body):
    s.sendall(t + struct.pack("!i", len(body) + 4) + body)


def error_fields(body):
    f = {}
    for part in body.split(b"\0"):
        if part:
            f[chr(part[0])] = part[1:].decode()
    return f


def main():
    host, port, user, db, password = sys.argv[1:6]
    sql = sys.argv[6] if len(sys.argv) > 6 else "SELECT current_user"
    if host.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(host, ".s.PGSQL.%s" % port))
    else:
        s = socket.create_connection((host, int(port)))
    s.settimeout(60)
    params = b"user\0" + user.encode() + b"\0database\0" + db.encode() + b"\0\0"
    body = struct.pack("!i", 196608) + params
    s.sendall(struct.pack("!i", len(body) + 4) + body)
    method = "trust"
    scram = None
    try:
        while True:
            t, b = read_msg(s)
            if t == b"E":
                f = error_fields(b)
                print("ERROR %s %s" % (f.get("C"), f.get("M")))
                return
            if t == b"R":
                (code,) = struct.unpack("!i", b[:4])
                if code == 0:
                    continue
                if password == "-":
                    s.close()
                    print("EOF")
                    return
                if code == 3:
                    method = "password"
                    send(s, b"p", password.encode() + b"\0")
                elif code == 5:
                    method = "md5"
                    inner = hashlib.md5((password + user).encode()).hexdigest()
                    outer = hashlib.md5(inner.encode() + b[4:8]).hexdigest()
                    send(s, b"p", b"md5" + outer.encode() + b"\0")
                elif code == 10:
                    method = "scram-sha-256"
                    mechs = b[4:].split(b"\0")
                    assert b"SCRAM-SHA-256" in mechs, mechs
                    nonce = base64.b64encode(os.urandom(18)).decode()
                    first_bare = "n=,r=" + nonce
                    data = ("n,," + first_bare).encode()
                    send(s, b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(data)) + data)
                    scram = {"bare": first_bare, "nonce": nonce}
                elif code == 11:
                    server_first = b[4:].decode()
                    attrs = dict(a.split("=", 1) for a in server_first.split(","))
                    assert attrs["r"].startswith(scram["nonce"])
                    salt = base64.b64decode(attrs["s"])
                    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, int(attrs["i"]))
                    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
                    stored_key = hashlib.sha256(client_key).digest()
                    without_proof = "c=biws,r=" + attrs["r"]
                    auth = ",".join([scram["bare"], server_first, without_proof]).encode()
                    sig = hmac.new(stored_key, auth, "sha256").digest()
                    proof = bytes(x ^ y for x, y in zip(client_key, sig))
                    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
                    scram["expect"] = "v=" + base64.b64encode(hmac.new(server_key, auth, "sha256").digest()).decode()
                    send(s, b"p", (without_proof + ",p=" + base64.b64encode(proof).decode()).encode())
                elif code == 12:
                    if b[4:].decode() != scram["expect"]:
                        print("ERROR client the server's signature is wrong")
                        return
                else:
                    print("ERROR client unexpected authentication request %d" % code)
                    return
            if t == b"Z":
                break
        send(s, b"Q", sql.encode() + b"\0")
        value = None
        while True:
            t, b = read_msg(s)
            if t == b"E":
                f = error_fields(b)
                print("ERROR %s %s" % (f.get("C"), f.get("M")))
                return
            if t == b"D" and value is None:
                (n,) = struct.unpack("!i", b[2:6])
                value = b[6 : 6 + n].decode() if n >= 0 else "NULL"
            if t == b"Z":
                break
        send(s, b"X", b"")
        print("OK %s %s" % (method, value))
    except EOFError:
        print("EOF")


main()
