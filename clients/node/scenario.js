// node-postgres's scenario of the client suite (crates/ferrogres/tests/clients.rs).
//
// Usage: node scenario.js HOST PORT USER DBNAME SOCKETDIR
//
// node-postgres speaks the text format by default (binary: true on a query asks for
// binary results); prints a transcript of what it decoded, which the test compares
// with the run against PostgreSQL 15.
'use strict';
const { Client, Pool } = require('pg');

const [host, port, user, database, sockdir] = process.argv.slice(2, 7);

function out(...parts) {
  console.log(parts.map((p) => (typeof p === 'string' ? p : show(p))).join(' '));
}

// A deterministic rendering of decoded values (Buffers, Dates, nested objects).
function show(v) {
  if (v === null || v === undefined) return String(v);
  if (Buffer.isBuffer(v)) return 'Buffer<' + v.toString('hex') + '>';
  if (v instanceof Date) return 'Date<' + v.toISOString() + '>';
  if (Array.isArray(v)) return '[' + v.map(show).join(', ') + ']';
  if (typeof v === 'object') {
    if (typeof v.toPostgres === 'function') return 'Interval<' + v.toPostgres() + '>';
    return '{' + Object.keys(v).map((k) => k + ': ' + show(v[k])).join(', ') + '}';
  }
  if (typeof v === 'string') return JSON.stringify(v);
  return typeof v + ':' + String(v);
}

function errLine(e) {
  return `${e.code} ${JSON.stringify(e.message)} detail=${show(e.detail)} schema=${show(e.schema)} ` +
    `table=${show(e.table)} column=${show(e.column)} constraint=${show(e.constraint)}`;
}

function client(h = host) {
  return new Client({ host: h, port: Number(port), user, database });
}

async function main() {
  // 1. Connect over TCP and the unix socket.
  let c = client();
  await c.connect();
  out('tcp', (await c.query('SELECT 1 + 1 AS two')).rows);
  await c.end();
  c = client(sockdir);
  await c.connect();
  out('unix', (await c.query("SELECT 'socket' AS s")).rows);
  await c.end();

  const conn = client();
  await conn.connect();
  await conn.query("SET TimeZone = 'UTC'");

  // 2. Round trip of the common types.
  await conn.query(`CREATE TABLE types (
    id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, f8 float8,
    t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp,
    tstz timestamptz, iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])`);
  const row = [1, 12, -345678, '9007199254740993', '12345.678900', 1.5, -2.25, 'héllo wörld', 'varchar',
    true, Buffer.from([0, 1, 0xfe, 0xff]), '2024-02-29', '13:14:15.123456', '2024-01-02 03:04:05.678',
    new Date(Date.UTC(2024, 5, 7, 8, 9, 10)), '3 days 04:05:06', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    JSON.stringify({ a: 1, b: [true, null] }), { k: 'v', n: 1.5 }, [1, 2, 3], ['x', 'y z', '', null, 'q"uote']];
  const ph = row.map((_, i) => '$' + (i + 1)).join(', ');
  const ins = await conn.query(`INSERT INTO types VALUES (${ph})`, row);
  out('insert', ins.command, ins.rowCount);
  await conn.query('INSERT INTO types (id) VALUES (2)');
  const res = await conn.query('SELECT * FROM types ORDER BY id');
  out('fields', res.fields.map((f) => [f.name, f.dataTypeID, f.format]));
  for (const r of res.rows) out('row', r);
  const arr = await conn.query({ text: 'SELECT * FROM types ORDER BY id', rowMode: 'array' });
  out('array mode', arr.rows[0].length, arr.rows[1]);
  // Binary results, kept as the bytes on the wire (pg-types decodes only some).
  const raw = { getTypeParser: () => (v) => v };
  const bin = await conn.query({ text: 'SELECT * FROM types WHERE id > $1 ORDER BY id', values: [0], binary: true, types: raw });
  out('binary fields', bin.fields.map((f) => [f.name, f.format]));
  for (const r of bin.rows) out('binary row', r);
  const named = { name: 'by_id', text: 'SELECT t, ia FROM types WHERE id = $1' };
  out('named', (await conn.query({ ...named, values: [1] })).rows, (await conn.query({ ...named, values: [2] })).rows);

  // 3. Transactions and savepoints.
  await conn.query('CREATE TABLE tx (v int)');
  await conn.query('BEGIN');
  await conn.query('INSERT INTO tx VALUES (1)');
  await conn.query('SAVEPOINT s1');
  await conn.query('INSERT INTO tx VALUES (2)');
  await conn.query('ROLLBACK TO SAVEPOINT s1');
  await conn.query('INSERT INTO tx VALUES (3)');
  await conn.query('COMMIT');
  await conn.query('BEGIN');
  await conn.query('INSERT INTO tx VALUES (4)');
  try { await conn.query('SELECT 1/0'); } catch (e) { out('in transaction:', errLine(e)); }
  try { await conn.query('SELECT 1'); } catch (e) { out('aborted:', errLine(e)); }
  await conn.query('ROLLBACK');
  out('tx', (await conn.query('SELECT array_agg(v ORDER BY v) AS v FROM tx')).rows);

  // 4. Constraint errors with their fields; the session goes on.
  await conn.query('CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)');
  await conn.query(`CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
     qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)`);
  await conn.query("INSERT INTO parent VALUES (1, 'one')");
  for (const [q, v] of [['INSERT INTO parent VALUES ($1, $2)', [1, 'uno']],
    ['INSERT INTO child VALUES ($1, $2, $3, $4)', [1, 99, 1, 'n']],
    ['INSERT INTO child VALUES ($1, $2, $3, $4)', [1, 1, 0, 'n']],
    ['INSERT INTO child VALUES ($1, $2, $3, $4)', [1, 1, 1, null]],
    ['SELECT $1::int', ['x']]]) {
    try { await conn.query(q, v); out('no error:', q); } catch (e) { out('error', errLine(e)); }
  }
  out('still usable', (await conn.query('SELECT count(*) FROM parent')).rows);

  // 5. A 10,000-row result.
  const big = await conn.query('SELECT g, md5(g::text) AS h FROM generate_series(1, 10000) g');
  out('rows', big.rowCount, big.rows[0], big.rows[9999], big.rows.reduce((s, r) => s + r.g, 0));

  // 6. A cursor read in chunks: portals with a row limit (Execute with max rows), as
  // pg-cursor and pg-query-stream do, then DECLARE / FETCH.
  await conn.query('BEGIN');
  await conn.query('DECLARE chunks CURSOR FOR SELECT g FROM generate_series(1, 2500) g');
  const sizes = [];
  for (;;) {
    const r = await conn.query('FETCH 1000 FROM chunks');
    if (r.rowCount === 0) break;
    sizes.push([r.rowCount, r.rows[0].g, r.rows[r.rowCount - 1].g]);
  }
  await conn.query('CLOSE chunks');
  await conn.query('COMMIT');
  out('declared cursor', sizes);

  // 7. COPY: node-postgres needs pg-copy-streams for COPY, not part of this
  // scenario; COPY TO STDOUT through a simple query is answered with an error.
  // 8. Cancel of a running pg_sleep (a second connection sends the cancel request,
  // as pg's client does for query_timeout it does not: pg_cancel_backend).
  const killer = client();
  await killer.connect();
  const pid = (await conn.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  const sleeping = conn.query('SELECT pg_sleep(20)').then(() => 'no cancel', (e) => 'cancel ' + errLine(e));
  await new Promise((r) => setTimeout(r, 500));
  out('pg_cancel_backend', (await killer.query('SELECT pg_cancel_backend($1) AS ok', [pid])).rows);
  out(await sleeping);
  out('after cancel', (await conn.query("SELECT 'ok' AS s")).rows);

  // 9. statement_timeout, as a connection option.
  const timed = new Client({ host, port: Number(port), user, database, statement_timeout: 300 });
  await timed.connect();
  try { await timed.query('SELECT pg_sleep(20)'); out('no timeout'); } catch (e) { out('timeout', errLine(e)); }
  out('timed usable', (await timed.query('SHOW statement_timeout')).rows);
  await timed.end();

  // 10. LISTEN / NOTIFY between two connections.
  const got = [];
  const heard = new Promise((resolve) => {
    killer.on('notification', (n) => { got.push([n.channel, n.payload]); if (got.length === 2) resolve(); });
  });
  await killer.query('LISTEN jobs');
  await conn.query("NOTIFY jobs, 'hello'");
  await conn.query("SELECT pg_notify('jobs', $1)", ['from a parameter']);
  await Promise.race([heard, new Promise((_, rej) => setTimeout(() => rej(new Error('no notification')), 10000))]);
  out('notifies', got);
  await killer.end();

  // 11. A pool.
  const pool = new Pool({ host, port: Number(port), user, database, max: 2 });
  const results = await Promise.all([1, 2, 3, 4].map((i) => pool.query('SELECT $1::int * 2 AS d', [i])));
  out('pool', results.map((r) => r.rows[0].d));
  await pool.end();
  await conn.end();
  out('done');
}

main().catch((e) => { console.error(e); process.exit(1); });
