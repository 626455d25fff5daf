// pgx v4's scenario of the client suite (crates/ferrogres/tests/clients.rs).
//
// Usage: go run clients/pgx/main.go HOST PORT USER DBNAME SOCKETDIR
// (GOPATH mode against Debian's packaged pgx: GO111MODULE=off
// GOPATH=/usr/share/gocode; there is no module proxy here).
//
// pgx prepares every statement and uses the binary format for the types it knows.
// Prints a transcript of what it decoded; the test compares it with the run
// against PostgreSQL 15.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
)

var ctx = context.Background()

func out(parts ...interface{}) {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = show(p)
	}
	fmt.Println(strings.Join(s, " "))
}

func show(v interface{}) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "nil"
	case time.Time:
		return "time<" + x.UTC().Format(time.RFC3339Nano) + ">"
	case []byte:
		return fmt.Sprintf("bytes%v", x)
	case pgtype.Numeric:
		var f float64
		_ = x.AssignTo(&f)
		return fmt.Sprintf("numeric<%v e%d %v>", x.Int, x.Exp, f)
	case pgtype.Interval:
		return fmt.Sprintf("interval<%dus %dd %dm>", x.Microseconds, x.Days, x.Months)
	case [16]byte:
		return fmt.Sprintf("uuid%x", x)
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		p := make([]string, len(keys))
		for i, k := range keys {
			p[i] = k + ":" + show(x[k])
		}
		return "{" + strings.Join(p, ",") + "}"
	case []interface{}:
		p := make([]string, len(x))
		for i, e := range x {
			p[i] = show(e)
		}
		return "[" + strings.Join(p, ",") + "]"
	}
	return fmt.Sprintf("%T:%v", v, v)
}

func errLine(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %q detail=%q schema=%q table=%q column=%q constraint=%q datatype=%q",
			pe.Code, pe.Message, pe.Detail, pe.SchemaName, pe.TableName, pe.ColumnName, pe.ConstraintName, pe.DataTypeName)
	}
	return "not a server error: " + err.Error()
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "unexpected error:", err)
		os.Exit(1)
	}
}

func main() {
	host, port, user, db, sockdir := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	url := fmt.Sprintf("postgres://%s@%s:%s/%s?sslmode=disable", user, host, port, db)

	// 1. Connect over TCP and the unix socket; QueryRow.
	c, err := pgx.Connect(ctx, url)
	must(err)
	var two int
	must(c.QueryRow(ctx, "SELECT 1 + 1").Scan(&two))
	out("tcp", two, c.PgConn().ParameterStatus("server_encoding"), c.PgConn().ParameterStatus("integer_datetimes"))
	c.Close(ctx)
	c, err = pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=%s dbname=%s", sockdir, port, user, db))
	must(err)
	var s string
	must(c.QueryRow(ctx, "SELECT 'socket'").Scan(&s))
	out("unix", s)
	c.Close(ctx)

	conn, err := pgx.Connect(ctx, url)
	must(err)
	_, err = conn.Exec(ctx, "SET TimeZone = 'UTC'")
	must(err)

	// 2. Round trip of the common types (binary format).
	_, err = conn.Exec(ctx, `CREATE TABLE types (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4,
		f8 float8, t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp, tstz timestamptz,
		iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])`)
	must(err)
	n := &pgtype.Numeric{}
	must(n.Set("12345.678900"))
	iv := &pgtype.Interval{Microseconds: (4*3600 + 5*60 + 6) * 1000000, Days: 3, Status: pgtype.Present}
	tag, err := conn.Exec(ctx, "INSERT INTO types VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
		1, int16(12), int32(-345678), int64(9007199254740993), n, float32(1.5), -2.25, "héllo wörld", "varchar", true,
		[]byte{0, 1, 0xfe, 0xff}, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "13:14:15.123456",
		time.Date(2024, 1, 2, 3, 4, 5, 678000000, time.UTC), time.Date(2024, 6, 7, 8, 9, 10, 0, time.UTC), iv,
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", map[string]interface{}{"a": 1}, map[string]interface{}{"k": "v"},
		[]int32{1, 2, 3}, []string{"x", "y z", ""})
	must(err)
	out("insert", tag.String())
	_, err = conn.Exec(ctx, "INSERT INTO types (id) VALUES (2)")
	must(err)
	rows, err := conn.Query(ctx, "SELECT * FROM types ORDER BY id")
	must(err)
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d:%d", f.Name, f.DataTypeOID, f.Format))
	}
	out("fields", strings.Join(names, " "))
	for rows.Next() {
		vals, err := rows.Values()
		must(err)
		out("row", vals)
	}
	must(rows.Err())
	var i8 int64
	var txt string
	var ia []int32
	var ts time.Time
	must(conn.QueryRow(ctx, "SELECT i8, t, ia, tstz FROM types WHERE id = $1", 1).Scan(&i8, &txt, &ia, &ts))
	out("scan", i8, txt, fmt.Sprint(ia), ts)
	var null *int32
	must(conn.QueryRow(ctx, "SELECT i4 FROM types WHERE id = 2").Scan(&null))
	out("null", null == nil)

	// 3. Transactions and savepoints (a nested Begin is a savepoint).
	_, err = conn.Exec(ctx, "CREATE TABLE tx (v int)")
	must(err)
	tx, err := conn.Begin(ctx)
	must(err)
	_, err = tx.Exec(ctx, "INSERT INTO tx VALUES (1)")
	must(err)
	sp, err := tx.Begin(ctx)
	must(err)
	_, err = sp.Exec(ctx, "INSERT INTO tx VALUES (2)")
	must(err)
	must(sp.Rollback(ctx))
	_, err = tx.Exec(ctx, "INSERT INTO tx VALUES (3)")
	must(err)
	must(tx.Commit(ctx))
	tx, err = conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	must(err)
	_, err = tx.Exec(ctx, "INSERT INTO tx VALUES (4)")
	out("read only:", errLine(err))
	must(tx.Rollback(ctx))
	var agg []int32
	must(conn.QueryRow(ctx, "SELECT array_agg(v ORDER BY v) FROM tx").Scan(&agg))
	out("tx", fmt.Sprint(agg))

	// 4. Constraint errors with their fields; the session goes on.
	for _, q := range []string{"CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)",
		`CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
		 qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)`,
		"INSERT INTO parent VALUES (1, 'one')"} {
		_, err = conn.Exec(ctx, q)
		must(err)
	}
	for _, q := range [][]interface{}{{"INSERT INTO parent VALUES ($1, $2)", 1, "uno"},
		{"INSERT INTO child VALUES ($1, $2, $3, $4)", 1, 99, 1, "n"},
		{"INSERT INTO child VALUES ($1, $2, $3, $4)", 1, 1, 0, "n"},
		{"INSERT INTO child VALUES ($1, $2, $3, $4)", 1, 1, 1, nil},
		{"SELECT 1/$1::int", 0}} {
		_, err = conn.Exec(ctx, q[0].(string), q[1:]...)
		out("error", errLine(err))
	}
	var cnt int64
	must(conn.QueryRow(ctx, "SELECT count(*) FROM parent").Scan(&cnt))
	out("still usable", cnt)

	// 5. A 10,000-row result.
	rows, err = conn.Query(ctx, "SELECT g, md5(g::text) FROM generate_series(1, 10000) g")
	must(err)
	var total, count int64
	var last string
	for rows.Next() {
		var g int64
		must(rows.Scan(&g, &last))
		total += g
		count++
	}
	must(rows.Err())
	out("rows", count, total, last)

	// 6. A cursor read in chunks.
	tx, err = conn.Begin(ctx)
	must(err)
	_, err = tx.Exec(ctx, "DECLARE chunks CURSOR FOR SELECT g FROM generate_series(1, 2500) g")
	must(err)
	var sizes []string
	for {
		rows, err := tx.Query(ctx, "FETCH 1000 FROM chunks")
		must(err)
		k, first, lastv := 0, int32(0), int32(0)
		for rows.Next() {
			must(rows.Scan(&lastv))
			if k == 0 {
				first = lastv
			}
			k++
		}
		must(rows.Err())
		if k == 0 {
			break
		}
		sizes = append(sizes, fmt.Sprintf("%d:%d-%d", k, first, lastv))
	}
	must(tx.Commit(ctx))
	out("cursor", strings.Join(sizes, " "))

	// 7. COPY in and out, text format, through pgconn; then pgx's CopyFrom,
	// which speaks binary COPY.
	_, err = conn.Exec(ctx, "CREATE TABLE cp (a int, b text)")
	must(err)
	ct, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("1\tone\n2\t\\N\n3\tthree\n"), "COPY cp FROM STDIN")
	must(err)
	out("copy in", ct.RowsAffected())
	var buf strings.Builder
	ct, err = conn.PgConn().CopyTo(ctx, &buf, "COPY (SELECT * FROM cp ORDER BY a) TO STDOUT WITH (FORMAT csv)")
	must(err)
	out("copy out", ct.RowsAffected(), fmt.Sprintf("%q", buf.String()))
	_, err = conn.Exec(ctx, "CREATE TABLE cpb (a int8, b text, c float8, d timestamptz, e bool, f int4[], g bytea, h date)")
	must(err)
	cts := time.Date(2024, 2, 29, 12, 30, 0, 123456000, time.UTC)
	cday := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"cpb"}, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, pgx.CopyFromRows([][]interface{}{
		{int64(1), "one", 1.5, cts, true, []int32{1, 2, 3}, []byte{0, 255}, cday},
		{int64(2), nil, nil, nil, nil, nil, nil, nil},
		{int64(-9007199254740993), "tab\there", -0.25, cts.Add(-48 * time.Hour), false, []int32{}, []byte{}, cday.AddDate(24, 1, 28)},
	}))
	must(err)
	out("copy from", copied)
	rows, err = conn.Query(ctx, "SELECT a, b::text, c::text, d::text, e::text, f::text, g::text, h::text FROM cpb ORDER BY a")
	must(err)
	for rows.Next() {
		var a int64
		var b, c, d, e, f, g, h *string
		must(rows.Scan(&a, &b, &c, &d, &e, &f, &g, &h))
		show := func(p *string) string {
			if p == nil {
				return "NULL"
			}
			return *p
		}
		out("copy from row", a, show(b), show(c), show(d), show(e), show(f), show(g), show(h))
	}
	must(rows.Err())
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"cpb"}, []string{"a", "b"}, pgx.CopyFromRows([][]interface{}{{int64(9), "x"}, {nil, 1}}))
	out("copy from bad", errLine(err))

	// 8. Cancel through a cancel request, the connection kept.
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = conn.PgConn().CancelRequest(ctx)
	}()
	_, err = conn.Exec(ctx, "SELECT pg_sleep(20)")
	out("cancel", errLine(err))
	must(conn.QueryRow(ctx, "SELECT 'ok'").Scan(&s))
	out("after cancel", s)

	// 9. statement_timeout.
	_, err = conn.Exec(ctx, "SET statement_timeout = '300ms'")
	must(err)
	_, err = conn.Exec(ctx, "SELECT pg_sleep(20)")
	out("timeout", errLine(err))
	_, err = conn.Exec(ctx, "RESET statement_timeout")
	must(err)

	// 10. LISTEN / NOTIFY between two connections.
	listener, err := pgx.Connect(ctx, url)
	must(err)
	_, err = listener.Exec(ctx, "LISTEN jobs")
	must(err)
	_, err = conn.Exec(ctx, "NOTIFY jobs, 'hello'")
	must(err)
	_, err = conn.Exec(ctx, "SELECT pg_notify('jobs', $1)", "from a parameter")
	must(err)
	var got []string
	for len(got) < 2 {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		nt, err := listener.WaitForNotification(wctx)
		cancel()
		must(err)
		got = append(got, nt.Channel+":"+nt.Payload)
	}
	out("notifies", strings.Join(got, " "))
	listener.Close(ctx)

	// 11. A batch.
	b := &pgx.Batch{}
	b.Queue("SELECT $1::int * 2", 21)
	b.Queue("SELECT count(*) FROM types")
	br := conn.SendBatch(ctx, b)
	var d, e int64
	must(br.QueryRow().Scan(&d))
	must(br.QueryRow().Scan(&e))
	must(br.Close())
	out("batch", d, e)
	conn.Close(ctx)
	out("done")
}
