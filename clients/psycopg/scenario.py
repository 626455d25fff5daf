"""psycopg 3's scenario of the client suite (crates/ferrogres/tests/clients.rs).

Usage: scenario.py HOST PORT USER DBNAME SOCKETDIR

Runs a fixed scenario and prints a transcript of what psycopg decoded: the same
program runs against ferrogres and PostgreSQL 15, and the test compares the two
transcripts. Nothing printed may depend on the server's process ids, timings or
object OIDs other than built-in types'.
"""
import sys
import threading
import time
import datetime as dt
import decimal
import uuid

import psycopg
from psycopg import sql
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb

host, port, user, dbname, sockdir = sys.argv[1:6]


def out(*parts):
    print(*parts, flush=True)


def err_line(e):
    d = e.diag
    return (f"{d.sqlstate} {d.message_primary!r} detail={d.message_detail!r} "
            f"schema={d.schema_name!r} table={d.table_name!r} column={d.column_name!r} "
            f"constraint={d.constraint_name!r}")


def connect(h=host, **kw):
    return psycopg.connect(host=h, port=port, user=user, dbname=dbname, **kw)


# 1. Connect over TCP and over the unix socket.
with connect() as c:
    out("tcp", c.execute("SELECT 1 + 1").fetchone())
    for p in ("server_encoding", "client_encoding", "integer_datetimes", "DateStyle",
              "standard_conforming_strings"):
        out("param", p, c.info.parameter_status(p))
with connect(sockdir) as c:
    out("unix", c.execute("SELECT 'socket'").fetchone())

conn = connect(autocommit=True)
conn.execute("SET TimeZone = 'UTC'")
conn.execute("SET IntervalStyle = 'postgres'")

# 2. Round trip of the common types, text and binary.
conn.execute("""CREATE TABLE types (
    id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, f8 float8,
    t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp,
    tstz timestamptz, iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])""")
row = (1, 12, -345678, 9007199254740993, decimal.Decimal("12345.678900"), 1.5, -2.25,
       "héllo wörld", "varchar", True, b"\x00\x01\xfe\xff", dt.date(2024, 2, 29),
       dt.time(13, 14, 15, 123456), dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
       dt.datetime(2024, 6, 7, 8, 9, 10, tzinfo=dt.timezone.utc),
       dt.timedelta(days=3, hours=4, minutes=5, seconds=6),
       uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
       psycopg.types.json.Json({"a": 1, "b": [True, None]}),
       psycopg.types.json.Jsonb({"k": "v", "n": 1.5}), [1, 2, 3], ["x", "y z", ""])
ph = ", ".join(["%s"] * len(row))
conn.execute(f"INSERT INTO types VALUES ({ph})", row)
conn.execute("INSERT INTO types (id) VALUES (2)")
with conn.cursor(binary=True) as cur:
    cur.execute(f"INSERT INTO types VALUES ({ph})", (3,) + row[1:])
for binary in (False, True):
    with conn.cursor(binary=binary) as cur:
        cur.execute("SELECT * FROM types ORDER BY id")
        out("columns", [(d.name, d.type_code) for d in cur.description])
        for r in cur:
            out("binary" if binary else "text", r)
    with conn.cursor(binary=binary) as cur:
        cur.execute("SELECT %s::int8 + 1, %s::text || '!', %s::numeric * 2, %s::text IS NULL",
                    (41, "param", decimal.Decimal("1.25"), None))
        out("params", binary, cur.fetchone())

# 3. Transactions and savepoints.
conn.execute("CREATE TABLE tx (v int)")
with conn.transaction():
    conn.execute("INSERT INTO tx VALUES (1)")
    try:
        with conn.transaction():
            conn.execute("INSERT INTO tx VALUES (2)")
            raise RuntimeError("roll back the savepoint")
    except RuntimeError as e:
        out("savepoint rolled back:", e)
    with conn.transaction():
        conn.execute("INSERT INTO tx VALUES (3)")
try:
    with conn.transaction():
        conn.execute("INSERT INTO tx VALUES (4)")
        conn.execute("SELECT 1/0")
except psycopg.Error as e:
    out("in transaction:", err_line(e))
out("tx", conn.execute("SELECT array_agg(v ORDER BY v) FROM tx").fetchone())

# 4. Constraint errors with their fields; the session goes on.
conn.execute("CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)")
conn.execute("""CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
                qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)""")
conn.execute("INSERT INTO parent VALUES (1, 'one')")
for stmt in ("INSERT INTO parent VALUES (1, 'uno')",
             "INSERT INTO parent VALUES (2, 'one')",
             "INSERT INTO child VALUES (1, 99, 1, 'n')",
             "INSERT INTO child VALUES (1, 1, 0, 'n')",
             "INSERT INTO child VALUES (1, 1, 1, NULL)",
             "SELECT no_such_column FROM parent",
             "SELECT * FROM no_such_table",
             "SELECT 'abc'::int"):
    try:
        conn.execute(stmt)
        out("no error:", stmt)
    except psycopg.Error as e:
        out(type(e).__name__, err_line(e))
out("still usable", conn.execute("SELECT count(*) FROM parent").fetchone())

# 5. A 10,000-row result.
cur = conn.execute("SELECT g, md5(g::text) FROM generate_series(1, 10000) g")
rows = cur.fetchall()
out("rows", len(rows), rows[0], rows[-1], sum(r[0] for r in rows))

# 5b. CREATE TABLE ... AS and SELECT ... INTO, their parameters sent through
# Parse/Bind; rowcount and the status come from the command tag.
with conn.cursor() as cur:
    cur.execute("CREATE TABLE ctas AS SELECT g, md5(g::text) AS h FROM generate_series(1, %s) g", (500,))
    out("ctas", cur.rowcount, cur.statusmessage, cur.description)
    cur.execute("SELECT g INTO TEMP ctas_into FROM ctas WHERE g > %s", (490,))
    out("select into", cur.rowcount, cur.statusmessage)
    cur.execute("CREATE TABLE ctas_empty AS SELECT * FROM ctas WITH NO DATA")
    out("with no data", cur.rowcount, cur.statusmessage)
out("ctas rows", conn.execute("SELECT count(*), sum(g) FROM ctas").fetchone(), conn.execute("SELECT count(*) FROM ctas_into").fetchone())
# CREATE TABLE ... AS EXECUTE through Parse/Bind/Execute (prepare=True).
conn.execute("PREPARE big_g(int) AS SELECT g FROM ctas WHERE g > $1")
with conn.cursor() as cur:
    cur.execute("CREATE TABLE ctas_exec AS EXECUTE big_g(495)", prepare=True)
    out("ctas execute", cur.rowcount, cur.statusmessage)
    cur.execute("CREATE TABLE ctas_exec_empty AS EXECUTE big_g(1) WITH NO DATA", prepare=True)
    out("ctas execute no data", cur.rowcount, cur.statusmessage)
    try:
        cur.execute("CREATE TABLE ctas_exec AS EXECUTE big_g(1)", prepare=True)
    except psycopg.Error as e:
        out("ctas execute again", err_line(e))
out("ctas execute rows", conn.execute("SELECT count(*), sum(g) FROM ctas_exec").fetchone(), conn.execute("SELECT count(*) FROM ctas_exec_empty").fetchone())
conn.execute("DEALLOCATE big_g")
# The ctid system column and the tid type, in text and binary (tidsend's 6 bytes).
for binary in (False, True):
    with conn.cursor(binary=binary) as cur:
        cur.execute("SELECT ctid, g, '(7,8)'::tid FROM ctas WHERE ctid = %s", ("(0,3)",))
        out("ctid", binary, [d.type_code for d in cur.description], cur.fetchall())

# 6. A server-side (named) cursor read in chunks.
with conn.transaction():
    with conn.cursor(name="chunks") as cur:
        cur.itersize = 1000
        cur.execute("SELECT g FROM generate_series(1, 2500) g")
        sizes = []
        while True:
            chunk = cur.fetchmany(1000)
            if not chunk:
                break
            sizes.append((len(chunk), chunk[0][0], chunk[-1][0]))
        out("named cursor", sizes)

# 7. COPY in and out, text format.
conn.execute("CREATE TABLE cp (a int, b text, c numeric)")
with conn.cursor() as cur:
    with cur.copy("COPY cp (a, b, c) FROM STDIN") as cp:
        for i in range(1, 6):
            cp.write_row((i, f"row {i}\twith tab" if i == 2 else f"row {i}", None if i == 3 else i * 1.5))
    out("copy in", cur.rowcount)
    with cur.copy("COPY (SELECT * FROM cp ORDER BY a) TO STDOUT") as cp:
        data = b"".join(bytes(b) for b in cp)
    out("copy out", data)
    with cur.copy("COPY cp TO STDOUT WITH (FORMAT csv, HEADER)") as cp:
        out("copy csv", b"".join(bytes(b) for b in cp))

# 7b. COPY in binary: rows written with set_types, read back as rows and as bytes.
conn.execute("CREATE TABLE cpb (a int, b text, c numeric, d timestamptz, e bytea, f int4[], g uuid, h jsonb, i bool, j float8)")
with conn.cursor() as cur:
    with cur.copy("COPY cpb FROM STDIN (FORMAT binary)") as cp:
        cp.set_types(["int4", "text", "numeric", "timestamptz", "bytea", "int4[]", "uuid", "jsonb", "bool", "float8"])
        cp.write_row((1, "one", decimal.Decimal("1.50"), dt.datetime(2024, 2, 29, 12, 0, tzinfo=dt.timezone.utc), b"\x00\xff",
                      [1, None, 3], uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), Jsonb({"k": [1, 2]}), True, 2.5))
        cp.write_row((2, None, None, None, None, None, None, None, None, None))
        cp.write_row((3, "tab\there", decimal.Decimal("-12345678901234567890.0001"), dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
                      b"", [], uuid.UUID(int=0), Jsonb([]), False, float("-inf")))
    out("copy binary in", cur.rowcount)
    with cur.copy("COPY (SELECT * FROM cpb ORDER BY a) TO STDOUT (FORMAT binary)") as cp:
        cp.set_types(["int4", "text", "numeric", "timestamptz", "bytea", "int4[]", "uuid", "jsonb", "bool", "float8"])
        for r in cp.rows():
            out("copy binary row", r)
    with cur.copy("COPY cpb (a, b, i) TO STDOUT (FORMAT binary)") as cp:
        out("copy binary bytes", b"".join(bytes(b) for b in cp))
    try:
        with cur.copy("COPY cpb FROM STDIN (FORMAT binary)") as cp:
            cp.write(b"PGCOPY\n\xff\r\n\x01")
    except psycopg.Error as e:
        out("copy binary bad", err_line(e), e.diag.context)
    out("after bad copy", conn.execute("SELECT count(*) FROM cpb").fetchone())

# 8. Cancel of a running pg_sleep.
def cancel_later(c):
    time.sleep(0.5)
    c.cancel_safe()

t = threading.Thread(target=cancel_later, args=(conn,))
t.start()
try:
    conn.execute("SELECT pg_sleep(20)")
    out("no cancel")
except psycopg.Error as e:
    out("cancel", err_line(e))
t.join()
out("after cancel", conn.execute("SELECT 'ok'").fetchone())

# 9. statement_timeout.
conn.execute("SET statement_timeout = '300ms'")
try:
    conn.execute("SELECT pg_sleep(20)")
    out("no timeout")
except psycopg.Error as e:
    out("timeout", err_line(e))
conn.execute("RESET statement_timeout")

# 10. LISTEN / NOTIFY between two connections.
listener = connect(autocommit=True)
listener.execute("LISTEN jobs")
with connect(autocommit=True) as talker:
    talker.execute("NOTIFY jobs, 'first'")
    talker.execute("SELECT pg_notify('jobs', 'second')")
    with talker.transaction():
        talker.execute("NOTIFY jobs, 'third'")
        talker.execute("NOTIFY jobs, 'third'")
got = []
for n in listener.notifies(timeout=10, stop_after=3):
    got.append((n.channel, n.payload))
out("notifies", got)
listener.close()

# 10b. numeric[]: parameters, a column with a typmod, text and binary results.
conn.execute("CREATE TABLE na (v numeric(6,2)[])")
conn.execute("INSERT INTO na VALUES (%s), ('{1.005,NULL,-7}'), (NULL)", ([decimal.Decimal("1.5"), decimal.Decimal("-0.001")],))
for binary in (False, True):
    with conn.cursor(binary=binary) as cur:
        cur.execute("SELECT v, v[1] AS first, array_length(v, 1) AS n FROM na ORDER BY 1 NULLS LAST")
        out("numeric[]", binary, cur.fetchall())
        cur.execute("SELECT %s::numeric[], ARRAY[1.50, NULL, -2]", ([decimal.Decimal("12345678901234567890.5")],))
        out("numeric[] param", binary, cur.fetchone())

# 11. psycopg's own introspection.
for name in ("int4", "text", "uuid", "jsonb", "timestamptz", "numeric"):
    ti = TypeInfo.fetch(conn, name)
    out("typeinfo", name, ti.name, ti.oid, ti.array_oid, ti.regtype)
ti = TypeInfo.fetch(conn, "no_such_type")
out("typeinfo missing", ti)
out("sql compose", sql.SQL("SELECT {} FROM {}").format(sql.Identifier("a"), sql.Identifier("types")).as_string(conn))
conn.close()
out("done")
