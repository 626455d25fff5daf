"""psycopg2's scenario of the client suite (crates/ferrogres/tests/clients.rs).

Usage: scenario.py HOST PORT USER DBNAME SOCKETDIR

Prints a transcript of what psycopg2 decoded (psycopg2 speaks the text format
only); the test compares it with the transcript of the same run against
PostgreSQL 15.
"""
import sys
import io
import select
import threading
import time
import datetime as dt
import decimal
import uuid

import psycopg2
import psycopg2.errors
import psycopg2.extras
import psycopg2.extensions

host, port, user, dbname, sockdir = sys.argv[1:6]
psycopg2.extras.register_uuid()


def out(*parts):
    print(*parts, flush=True)


def err_line(e):
    d = e.diag
    return (f"{e.pgcode} {d.message_primary!r} detail={d.message_detail!r} "
            f"schema={d.schema_name!r} table={d.table_name!r} column={d.column_name!r} "
            f"constraint={d.constraint_name!r}")


def connect(h=host):
    return psycopg2.connect(host=h, port=port, user=user, dbname=dbname)


# 1. Connect over TCP and the unix socket.
c = connect()
cur = c.cursor()
cur.execute("SELECT 1 + 1")
out("tcp", cur.fetchone(), c.server_version >= 150000, c.encoding)
c.close()
c = connect(sockdir)
cur = c.cursor()
cur.execute("SELECT 'socket'")
out("unix", cur.fetchone())
c.close()

conn = connect()
conn.autocommit = True
cur = conn.cursor()
cur.execute("SET TimeZone = 'UTC'")

# 2. Round trip of the common types (text format).
cur.execute("""CREATE TABLE types (
    id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, f8 float8,
    t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp,
    tstz timestamptz, iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])""")
row = (1, 12, -345678, 9007199254740993, decimal.Decimal("12345.678900"), 1.5, -2.25,
       "héllo wörld", "varchar", True, psycopg2.Binary(b"\x00\x01\xfe\xff"), dt.date(2024, 2, 29),
       dt.time(13, 14, 15, 123456), dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
       dt.datetime(2024, 6, 7, 8, 9, 10, tzinfo=dt.timezone.utc),
       dt.timedelta(days=3, hours=4, minutes=5, seconds=6),
       uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
       psycopg2.extras.Json({"a": 1, "b": [True, None]}),
       psycopg2.extras.Json({"k": "v", "n": 1.5}), [1, 2, 3], ["x", "y z", ""])
ph = ", ".join(["%s"] * len(row))
cur.execute(f"INSERT INTO types VALUES ({ph})", row)
out("mogrify", cur.mogrify("SELECT %s, %s, %s", (None, "it's", [1, None])).decode())
cur.execute("INSERT INTO types (id) VALUES (2)")
cur.execute("SELECT * FROM types ORDER BY id")
out("columns", [(d.name, d.type_code) for d in cur.description])
for r in cur.fetchall():
    out("row", tuple(bytes(v) if isinstance(v, memoryview) else v for v in r))
dc = conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor)
dc.execute("SELECT i4, t, ia FROM types WHERE id = %(id)s", {"id": 1})
out("dict", dc.fetchone())

# 3. Transactions and savepoints (psycopg2 opens a transaction itself).
cur.execute("CREATE TABLE tx (v int)")
conn.autocommit = False
cur.execute("INSERT INTO tx VALUES (1)")
cur.execute("SAVEPOINT s1")
cur.execute("INSERT INTO tx VALUES (2)")
cur.execute("ROLLBACK TO SAVEPOINT s1")
cur.execute("INSERT INTO tx VALUES (3)")
cur.execute("RELEASE SAVEPOINT s1")
out("status in tx", conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INTRANS)
conn.commit()
cur.execute("INSERT INTO tx VALUES (4)")
try:
    cur.execute("SELECT 1/0")
except psycopg2.Error as e:
    out("in transaction:", err_line(e))
    out("status", conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INERROR)
try:
    cur.execute("SELECT 1")
except psycopg2.Error as e:
    out("aborted:", err_line(e))
conn.rollback()
cur.execute("SELECT array_agg(v ORDER BY v) FROM tx")
out("tx", cur.fetchone())
conn.commit()
conn.autocommit = True

# 4. Constraint errors with their fields; the session goes on.
cur.execute("CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)")
cur.execute("""CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
               qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)""")
cur.execute("INSERT INTO parent VALUES (1, 'one')")
for stmt in ("INSERT INTO parent VALUES (1, 'uno')",
             "INSERT INTO child VALUES (1, 99, 1, 'n')",
             "INSERT INTO child VALUES (1, 1, 0, 'n')",
             "INSERT INTO child VALUES (1, 1, 1, NULL)",
             "DELETE FROM parent WHERE id = 1 AND EXISTS (SELECT 1 FROM child) OR id = 7"):
    try:
        cur.execute(stmt)
        out("ok:", stmt, cur.rowcount)
    except psycopg2.Error as e:
        out(type(e).__name__, err_line(e))
cur.execute("INSERT INTO child VALUES (1, 1, 1, 'n')")
try:
    cur.execute("DELETE FROM parent")
except psycopg2.errors.ForeignKeyViolation as e:
    out("fk delete", err_line(e))
cur.execute("SELECT count(*) FROM parent")
out("still usable", cur.fetchone())

# 5. A 10,000-row result, and executemany / execute_values.
cur.execute("SELECT g, g * 0.5 FROM generate_series(1, 10000) g")
rows = cur.fetchall()
out("rows", len(rows), rows[0], rows[-1], cur.rowcount)
cur.execute("CREATE TABLE many (a int, b text)")
cur.executemany("INSERT INTO many VALUES (%s, %s)", [(i, str(i)) for i in range(50)])
psycopg2.extras.execute_values(cur, "INSERT INTO many VALUES %s", [(i, None) for i in range(50, 120)], page_size=30)
cur.execute("SELECT count(*), count(b), sum(a) FROM many")
out("many", cur.fetchone())

# 6. A named (server-side) cursor read in chunks.
conn.autocommit = False
nc = conn.cursor(name="chunks")
nc.itersize = 700
nc.execute("SELECT g FROM generate_series(1, 2000) g")
sizes = []
while True:
    chunk = nc.fetchmany(900)
    if not chunk:
        break
    sizes.append((len(chunk), chunk[0][0], chunk[-1][0]))
out("named cursor", sizes)
nc.close()
conn.commit()
conn.autocommit = True

# 7. COPY in and out (text and csv).
cur.execute("CREATE TABLE cp (a int, b text, c numeric)")
cur.copy_from(io.StringIO("1\tone\t1.5\n2\t\\N\t2\n3\tthree\\ttab\t\\N\n"), "cp", columns=("a", "b", "c"))
out("copy_from", cur.rowcount)
cur.copy_expert("COPY cp FROM STDIN WITH (FORMAT csv)", io.StringIO('4,"four, quoted",4.25\n'))
buf = io.StringIO()
cur.copy_to(buf, "cp")
out("copy_to", repr(buf.getvalue()))
buf = io.StringIO()
cur.copy_expert("COPY (SELECT * FROM cp ORDER BY a DESC) TO STDOUT WITH (FORMAT csv, HEADER)", buf)
out("copy csv", repr(buf.getvalue()))

# 8. Cancel of a running pg_sleep.
def cancel_later(c):
    time.sleep(0.5)
    c.cancel()

t = threading.Thread(target=cancel_later, args=(conn,))
t.start()
try:
    cur.execute("SELECT pg_sleep(20)")
    out("no cancel")
except psycopg2.Error as e:
    out("cancel", type(e).__name__, err_line(e))
t.join()
cur.execute("SELECT 'ok'")
out("after cancel", cur.fetchone())

# 9. statement_timeout.
cur.execute("SET statement_timeout = 300")
try:
    cur.execute("SELECT pg_sleep(20)")
except psycopg2.Error as e:
    out("timeout", type(e).__name__, err_line(e))
cur.execute("RESET statement_timeout")

# 10. LISTEN / NOTIFY between two connections.
listener = connect()
listener.autocommit = True
listener.cursor().execute("LISTEN jobs")
talker = connect()
talker.autocommit = True
talker.cursor().execute("NOTIFY jobs, 'hello'")
talker.cursor().execute("NOTIFY other, 'not heard'")
talker.cursor().execute("SELECT pg_notify('jobs', 'again')")
got = []
deadline = time.time() + 10
while len(got) < 2 and time.time() < deadline:
    select.select([listener], [], [], 1)
    listener.poll()
    while listener.notifies:
        n = listener.notifies.pop(0)
        got.append((n.channel, n.payload))
out("notifies", got)
talker.close()
listener.close()

# 11. Introspection through psycopg2.extras: a composite type is not used; the
# server's own parameters and the type casters' OIDs.
cur.execute("SELECT typname, typarray FROM pg_type WHERE oid = ANY(%s) ORDER BY oid", ([16, 20, 25, 2950, 3802],))
out("pg_type", cur.fetchall())
out("quote_ident", psycopg2.extensions.quote_ident("Weird \"name\"", conn))
conn.close()
out("done")
