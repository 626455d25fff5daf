"""asyncpg's scenario of the client suite (crates/ferrogres/tests/clients.rs).

Usage: scenario.py HOST PORT USER DBNAME SOCKETDIR

asyncpg speaks the binary format and prepares every statement; its type
introspection runs for parameters of types it does not know (arrays of them).
Prints a transcript; the test compares it with the run against PostgreSQL 15.
"""
import asyncio
import sys
import datetime as dt
import decimal
import uuid

import asyncpg

host, port, user, dbname, sockdir = sys.argv[1:6]
port = int(port)


def out(*parts):
    print(*parts, flush=True)


def err_line(e):
    return (f"{e.sqlstate} {e.args[0]!r} detail={getattr(e, 'detail', None)!r} "
            f"schema={getattr(e, 'schema_name', None)!r} table={getattr(e, 'table_name', None)!r} "
            f"column={getattr(e, 'column_name', None)!r} constraint={getattr(e, 'constraint_name', None)!r}")


async def connect(h=host):
    return await asyncpg.connect(host=h, port=port, user=user, database=dbname)


async def main():
    # 1. Connect over TCP and the unix socket.
    c = await connect()
    out("tcp", await c.fetchval("SELECT 1 + 1"))
    for p in ("server_encoding", "client_encoding", "integer_datetimes", "DateStyle"):
        out("param", p, c.get_settings().__getattribute__(p))
    await c.close()
    c = await connect(sockdir)
    out("unix", await c.fetchval("SELECT 'socket'"))
    await c.close()

    conn = await connect()
    await conn.execute("SET TimeZone = 'UTC'")

    # 2. Round trip of the common types (binary format).
    await conn.execute("""CREATE TABLE types (
        id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, f8 float8,
        t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp,
        tstz timestamptz, iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])""")
    row = (1, 12, -345678, 9007199254740993, decimal.Decimal("12345.678900"), 1.5, -2.25,
           "héllo wörld", "varchar", True, b"\x00\x01\xfe\xff", dt.date(2024, 2, 29),
           dt.time(13, 14, 15, 123456), dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
           dt.datetime(2024, 6, 7, 8, 9, 10, tzinfo=dt.timezone.utc),
           dt.timedelta(days=3, hours=4, minutes=5, seconds=6),
           uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
           '{"a": 1, "b": [true, null]}', '{"k": "v", "n": 1.5}', [1, 2, 3], ["x", "y z", ""])
    ph = ", ".join(f"${i}" for i in range(1, len(row) + 1))
    out("insert", await conn.execute(f"INSERT INTO types VALUES ({ph})", *row))
    await conn.execute("INSERT INTO types (id) VALUES (2)")
    stmt = await conn.prepare("SELECT * FROM types ORDER BY id")
    out("columns", [(a.name, a.type.name, a.type.oid) for a in stmt.get_attributes()])
    for r in await stmt.fetch():
        out("row", tuple(r.values()))
    out("params", tuple(await conn.fetchrow(
        "SELECT $1::int8 + 1, $2::text || '!', $3::numeric * 2, $4::text IS NULL, $5::int[] || 4",
        41, "param", decimal.Decimal("1.25"), None, [1, 2, 3])))
    out("numeric special", await conn.fetchval("SELECT 'NaN'::numeric"), await conn.fetchval("SELECT 1e20::numeric"))

    # 3. Transactions and savepoints.
    await conn.execute("CREATE TABLE tx (v int)")
    async with conn.transaction():
        await conn.execute("INSERT INTO tx VALUES (1)")
        try:
            async with conn.transaction():
                await conn.execute("INSERT INTO tx VALUES (2)")
                raise RuntimeError("roll back the savepoint")
        except RuntimeError as e:
            out("savepoint rolled back:", e)
        async with conn.transaction():
            await conn.execute("INSERT INTO tx VALUES (3)")
    try:
        async with conn.transaction(isolation="repeatable_read"):
            await conn.execute("INSERT INTO tx VALUES (4)")
            await conn.execute("SELECT 1/0")
    except asyncpg.PostgresError as e:
        out("in transaction:", type(e).__name__, err_line(e))
    async with conn.transaction(readonly=True):
        try:
            await conn.execute("INSERT INTO tx VALUES (5)")
        except asyncpg.PostgresError as e:
            out("read only:", type(e).__name__, err_line(e))
    out("tx", await conn.fetchval("SELECT array_agg(v ORDER BY v) FROM tx"))

    # 4. Constraint errors with their fields; the session goes on.
    await conn.execute("CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)")
    await conn.execute("""CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
                qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)""")
    await conn.execute("INSERT INTO parent VALUES (1, 'one')")
    for stmt, args in (("INSERT INTO parent VALUES ($1, $2)", (1, "uno")),
                       ("INSERT INTO child VALUES ($1, $2, $3, $4)", (1, 99, 1, "n")),
                       ("INSERT INTO child VALUES ($1, $2, $3, $4)", (1, 1, 0, "n")),
                       ("INSERT INTO child VALUES ($1, $2, $3, $4)", (1, 1, 1, None)),
                       ("SELECT $1::int", ("x",))):
        try:
            await conn.execute(stmt, *args)
            out("no error:", stmt)
        except (asyncpg.PostgresError, asyncpg.DataError) as e:
            out(type(e).__name__, err_line(e) if isinstance(e, asyncpg.PostgresError) else str(e))
    out("still usable", await conn.fetchval("SELECT count(*) FROM parent"))

    # 5. A 10,000-row result; executemany.
    rows = await conn.fetch("SELECT g, md5(g::text) FROM generate_series(1, 10000) g")
    out("rows", len(rows), tuple(rows[0]), tuple(rows[-1]), sum(r[0] for r in rows))
    await conn.execute("CREATE TABLE many (a int, b text)")
    await conn.executemany("INSERT INTO many VALUES ($1, $2)", [(i, str(i)) for i in range(100)])
    out("many", tuple(await conn.fetchrow("SELECT count(*), sum(a), max(b) FROM many")))

    # 6. A cursor read in chunks (asyncpg cursors are portals inside a transaction).
    async with conn.transaction():
        cur = await conn.cursor("SELECT g FROM generate_series(1, 2500) g WHERE g > $1", 0)
        sizes = []
        while True:
            chunk = await cur.fetch(1000)
            if not chunk:
                break
            sizes.append((len(chunk), chunk[0][0], chunk[-1][0]))
        out("cursor", sizes)
        n = 0
        async for r in conn.cursor("SELECT g FROM generate_series(1, 1234) g", prefetch=100):
            n += r[0]
        out("cursor iter", n)

    # 7. COPY in and out: text COPY through copy_to_table / copy_from_query,
    # binary COPY through copy_records_to_table.
    await conn.execute("CREATE TABLE cp (a int, b text, c numeric)")
    import io
    src = io.BytesIO(b"1\tone\t1.5\n2\t\\N\t2\n3\tthree\\ttab\t\\N\n")
    out("copy in", await conn.copy_to_table("cp", source=src, columns=["a", "b", "c"]))
    dst = io.BytesIO()
    out("copy out", await conn.copy_from_query("SELECT * FROM cp ORDER BY a", output=dst))
    out("copy data", dst.getvalue())
    dst = io.BytesIO()
    await conn.copy_from_table("cp", output=dst, format="csv", header=True)
    out("copy csv", dst.getvalue())
    out("copy records", await conn.copy_records_to_table(
        "cp", records=[(10, "ten", decimal.Decimal("10.25")), (11, None, None), (12, "", decimal.Decimal("-0.001"))],
        columns=["a", "b", "c"]))
    out("copy records back", await conn.fetch("SELECT * FROM cp WHERE a >= 10 ORDER BY a"))
    dst = io.BytesIO()
    await conn.copy_from_query("SELECT a, b FROM cp WHERE a >= 10 ORDER BY a", output=dst, format="binary")
    out("copy binary out", dst.getvalue())

    # 8. Cancel: asyncpg cancels the running query when its task is cancelled.
    task = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(20)"))
    await asyncio.sleep(0.5)
    task.cancel()
    try:
        await task
        out("no cancel")
    except asyncio.CancelledError:
        out("cancelled task")
    out("after cancel", await conn.fetchval("SELECT 'ok'"))
    try:
        await conn.fetchval("SELECT pg_sleep(20)", timeout=0.5)
    except asyncio.TimeoutError:
        out("client timeout")
    out("after client timeout", await conn.fetchval("SELECT 'ok'"))

    # 9. statement_timeout.
    await conn.execute("SET statement_timeout = '300ms'")
    try:
        await conn.fetchval("SELECT pg_sleep(20)")
    except asyncpg.PostgresError as e:
        out("timeout", type(e).__name__, err_line(e))
    await conn.execute("RESET statement_timeout")

    # 10. LISTEN / NOTIFY between two connections.
    got = []
    done = asyncio.Event()

    def on_notify(_conn, _pid, channel, payload):
        got.append((channel, payload))
        if len(got) == 2:
            done.set()

    listener = await connect()
    await listener.add_listener("jobs", on_notify)
    talker = await connect()
    await talker.execute("NOTIFY jobs, 'hello'")
    await talker.execute("SELECT pg_notify('jobs', $1)", "param payload")
    await asyncio.wait_for(done.wait(), 10)
    out("notifies", got)
    await listener.remove_listener("jobs", on_notify)
    await talker.close()
    await listener.close()

    # 11. asyncpg's own introspection: parameters whose types it must look up.
    out("array param", await conn.fetchval("SELECT $1::int8[]", [1, 2, None]))
    out("text array", await conn.fetchval("SELECT array_length($1::text[], 1)", ["a", "b"]))
    out("uuid array", await conn.fetchval("SELECT $1::uuid[]", [uuid.UUID(int=1)]))
    out("jsonb array", await conn.fetchval("SELECT $1::jsonb[]", ['{"a": 1}']))
    out("date array", await conn.fetchval("SELECT $1::date[]", [dt.date(2020, 1, 1)]))
    st = await conn.prepare("SELECT $1::varchar[] AS v, $2::bool AS b")
    out("prepared", [t.name for t in st.get_parameters()], [a.name for a in st.get_attributes()])

    # 12. A pool: its reset between acquisitions (RESET ALL, CLOSE ALL, UNLISTEN *, ...).
    pool = await asyncpg.create_pool(host=host, port=port, user=user, database=dbname, min_size=1, max_size=2)
    for i in range(3):
        async with pool.acquire() as pc:
            await pc.execute("SET work_mem = '8MB'")
            out("pool", i, await pc.fetchval("SELECT count(*) FROM types"))
    await pool.close()
    await conn.close()
    out("done")


asyncio.run(main())
