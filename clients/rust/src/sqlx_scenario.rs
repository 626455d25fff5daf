//! sqlx (PostgreSQL, tokio): prepared statements with binary results, nested
//! transactions as savepoints, database errors with their fields, streams,
//! raw COPY (text and binary), PgListener. sqlx has no cancel request of its
//! own, so the scenario has none (statement_timeout stands in).

use crate::{out, Target};
use futures_util::TryStreamExt;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError, PgListener};
use sqlx::{Connection, Executor, Row};
use std::error::Error;

type R<T> = Result<T, Box<dyn Error>>;

fn err_line(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => match d.try_downcast_ref::<PgDatabaseError>() {
            Some(p) => format!(
                "{} {:?} detail={:?} schema={:?} table={:?} column={:?} constraint={:?} datatype={:?}",
                p.code(),
                p.message(),
                p.detail(),
                p.schema(),
                p.table(),
                p.column(),
                p.constraint(),
                p.data_type()
            ),
            None => format!("database error {d}"),
        },
        other => format!("not a server error: {other}"),
    }
}

pub async fn run(t: &Target) -> R<()> {
    let opts = PgConnectOptions::new().host(&t.host).port(t.port).username(&t.user).database(&t.db);

    // 1. Connect over TCP and the unix socket.
    let mut c = PgConnection::connect_with(&opts).await?;
    let two: i32 = sqlx::query_scalar("SELECT 1 + 1").fetch_one(&mut c).await?;
    out!("tcp {two}");
    c.close().await?;
    let sock = PgConnectOptions::new().socket(&t.sockdir).port(t.port).username(&t.user).database(&t.db);
    let mut c = PgConnection::connect_with(&sock).await?;
    let s: String = sqlx::query_scalar("SELECT 'socket'").fetch_one(&mut c).await?;
    out!("unix {s}");
    c.close().await?;

    let mut conn = PgConnection::connect_with(&opts).await?;
    conn.execute("SET TimeZone = 'UTC'").await?;

    // 2. Round trip of the common types (binary results and parameters).
    conn.execute(
        "CREATE TABLE types (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, t text,
         vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp, tstz timestamptz, u uuid,
         j json, jb jsonb, ia int4[], ta text[], n numeric, iv interval)",
    )
    .await?;
    let date = chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    let time = chrono::NaiveTime::from_hms_micro_opt(13, 14, 15, 123456).unwrap();
    let ts = chrono::NaiveDate::from_ymd_opt(2024, 1, 2).unwrap().and_hms_micro_opt(3, 4, 5, 678000).unwrap();
    let tstz = chrono::DateTime::<chrono::Utc>::from_naive_utc_and_offset(ts, chrono::Utc);
    let u = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")?;
    let j = serde_json::json!({"a": 1, "list": [true, null]});
    let done = sqlx::query(
        "INSERT INTO types VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
         '12345.678900', '3 days 04:05:06')",
    )
    .bind(1i32)
    .bind(12i16)
    .bind(-345678i32)
    .bind(9007199254740993i64)
    .bind(1.5f32)
    .bind(-2.25f64)
    .bind("héllo wörld")
    .bind("varchar")
    .bind(true)
    .bind(vec![0u8, 1, 0xfe, 0xff])
    .bind(date)
    .bind(time)
    .bind(ts)
    .bind(tstz)
    .bind(u)
    .bind(sqlx::types::Json(&j))
    .bind(sqlx::types::Json(&j))
    .bind(vec![1i32, 2, 3])
    .bind(vec!["x", "y z", ""])
    .execute(&mut conn)
    .await?;
    out!("insert {}", done.rows_affected());
    sqlx::query("INSERT INTO types (id) VALUES (2)").execute(&mut conn).await?;
    let rows = sqlx::query("SELECT * FROM types ORDER BY id").fetch_all(&mut conn).await?;
    use sqlx::Column;
    use sqlx::TypeInfo;
    let cols: Vec<String> = rows[0].columns().iter().map(|c| format!("{}:{}", c.name(), c.type_info().name())).collect();
    out!("columns {}", cols.join(" "));
    for r in &rows {
        let id: i32 = r.try_get("id")?;
        out!(
            "row {id} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            r.try_get::<Option<i16>, _>("i2")?,
            r.try_get::<Option<i32>, _>("i4")?,
            r.try_get::<Option<i64>, _>("i8")?,
            r.try_get::<Option<f32>, _>("f4")?,
            r.try_get::<Option<f64>, _>("f8")?,
            r.try_get::<Option<String>, _>("t")?,
            r.try_get::<Option<String>, _>("vc")?,
            r.try_get::<Option<bool>, _>("b")?,
            r.try_get::<Option<Vec<u8>>, _>("by")?,
            r.try_get::<Option<chrono::NaiveDate>, _>("d")?,
        );
        out!(
            "row {id} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            r.try_get::<Option<chrono::NaiveTime>, _>("tm")?,
            r.try_get::<Option<chrono::NaiveDateTime>, _>("ts")?,
            r.try_get::<Option<chrono::DateTime<chrono::Utc>>, _>("tstz")?,
            r.try_get::<Option<uuid::Uuid>, _>("u")?,
            r.try_get::<Option<serde_json::Value>, _>("j")?,
            r.try_get::<Option<serde_json::Value>, _>("jb")?,
            r.try_get::<Option<Vec<i32>>, _>("ia")?,
            r.try_get::<Option<Vec<String>>, _>("ta")?,
        );
        let iv: Option<sqlx::postgres::types::PgInterval> = r.try_get("iv")?;
        out!("row {id} interval {:?}", iv.map(|i| (i.months, i.days, i.microseconds)));
    }
    let n: String = sqlx::query_scalar("SELECT n::text FROM types WHERE id = 1").fetch_one(&mut conn).await?;
    out!("numeric text {n}");
    let r = sqlx::query("SELECT $1::int8 + 1, $2 || '!', $3::float8[]").bind(41i64).bind("hey").bind(vec![0.5f64, -1.0]).fetch_one(&mut conn).await?;
    out!("params {} {} {:?}", r.try_get::<i64, _>(0)?, r.try_get::<String, _>(1)?, r.try_get::<Vec<f64>, _>(2)?);
    let null: Option<i32> = sqlx::query_scalar("SELECT $1::int4").bind(None::<i32>).fetch_one(&mut conn).await?;
    out!("null param {null:?}");

    // 3. Transactions; a nested begin is a savepoint.
    conn.execute("CREATE TABLE tx (v int)").await?;
    {
        let mut tx = conn.begin().await?;
        sqlx::query("INSERT INTO tx VALUES (1)").execute(&mut *tx).await?;
        {
            let mut sp = tx.begin().await?;
            sqlx::query("INSERT INTO tx VALUES (2)").execute(&mut *sp).await?;
            sp.rollback().await?;
        }
        sqlx::query("INSERT INTO tx VALUES (3)").execute(&mut *tx).await?;
        tx.commit().await?;
    }
    {
        let mut tx = conn.begin().await?;
        tx.execute("SET TRANSACTION READ ONLY").await?;
        let e = sqlx::query("INSERT INTO tx VALUES (4)").execute(&mut *tx).await.expect_err("read only");
        out!("read only: {}", err_line(&e));
        tx.rollback().await?;
    }
    let agg: Vec<i32> = sqlx::query_scalar("SELECT array_agg(v ORDER BY v) FROM tx").fetch_one(&mut conn).await?;
    out!("tx {agg:?}");

    // 4. Constraint errors with their fields; the session goes on.
    conn.execute(
        "CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE);
         CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
           qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL);
         INSERT INTO parent VALUES (1, 'one')",
    )
    .await?;
    let ins = "INSERT INTO child VALUES ($1, $2, $3, $4)";
    let errors = [
        sqlx::query("INSERT INTO parent VALUES ($1, $2)").bind(1i32).bind("uno").execute(&mut conn).await,
        sqlx::query(ins).bind(1i32).bind(99i32).bind(1i32).bind("n").execute(&mut conn).await,
        sqlx::query(ins).bind(1i32).bind(1i32).bind(0i32).bind("n").execute(&mut conn).await,
        sqlx::query(ins).bind(1i32).bind(1i32).bind(1i32).bind(None::<&str>).execute(&mut conn).await,
        sqlx::query("SELECT 1/$1::int").bind(0i32).execute(&mut conn).await,
    ];
    for e in errors {
        out!("error {}", err_line(&e.expect_err("a constraint error")));
    }
    let cnt: i64 = sqlx::query_scalar("SELECT count(*) FROM parent").fetch_one(&mut conn).await?;
    out!("still usable {cnt}");

    // 5. A 10,000-row result, and the same as a stream.
    let rows = sqlx::query("SELECT g, md5(g::text) FROM generate_series(1, 10000) g").fetch_all(&mut conn).await?;
    let total: i64 = rows.iter().map(|r| r.get::<i32, _>(0) as i64).sum();
    out!("rows {} {total} {}", rows.len(), rows.last().unwrap().get::<String, _>(1));
    let mut stream = sqlx::query_scalar::<_, i32>("SELECT g FROM generate_series(1, 2500) g").fetch(&mut conn);
    let (mut k, mut sum) = (0, 0i64);
    while let Some(g) = stream.try_next().await? {
        k += 1;
        sum += g as i64;
    }
    drop(stream);
    out!("stream {k} {sum}");

    // 6. A cursor read in chunks.
    {
        let mut tx = conn.begin().await?;
        tx.execute("DECLARE chunks CURSOR FOR SELECT g FROM generate_series(1, 2500) g").await?;
        let mut sizes = Vec::new();
        loop {
            let chunk: Vec<i32> = sqlx::query_scalar("FETCH 1000 FROM chunks").fetch_all(&mut *tx).await?;
            if chunk.is_empty() {
                break;
            }
            sizes.push(format!("{}:{}-{}", chunk.len(), chunk[0], chunk[chunk.len() - 1]));
        }
        out!("cursor {}", sizes.join(" "));
        tx.commit().await?;
    }

    // 7. COPY in and out, text and binary, through the raw COPY API.
    conn.execute("CREATE TABLE cp (a int, b text)").await?;
    let mut copy = conn.copy_in_raw("COPY cp FROM STDIN").await?;
    copy.send(b"1\tone\n2\t\\N\n3\tthree\n".as_slice()).await?;
    out!("copy in {}", copy.finish().await?);
    let mut bin = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
    for (a, b) in [(10i32, Some("ten")), (11, None)] {
        bin.extend_from_slice(&2i16.to_be_bytes());
        bin.extend_from_slice(&4i32.to_be_bytes());
        bin.extend_from_slice(&a.to_be_bytes());
        match b {
            Some(s) => {
                bin.extend_from_slice(&(s.len() as i32).to_be_bytes());
                bin.extend_from_slice(s.as_bytes());
            }
            None => bin.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    bin.extend_from_slice(&(-1i16).to_be_bytes());
    let mut copy = conn.copy_in_raw("COPY cp FROM STDIN (FORMAT binary)").await?;
    copy.send(bin).await?;
    out!("binary copy in {}", copy.finish().await?);
    for q in ["COPY (SELECT * FROM cp ORDER BY a) TO STDOUT WITH (FORMAT csv)", "COPY (SELECT * FROM cp ORDER BY a) TO STDOUT (FORMAT binary)"] {
        let mut data = Vec::new();
        let mut stream = conn.copy_out_raw(q).await?;
        while let Some(chunk) = stream.try_next().await? {
            data.extend_from_slice(&chunk);
        }
        drop(stream);
        out!("copy out {:?}", data.escape_ascii().to_string());
    }

    // 8. statement_timeout (sqlx sends no cancel request of its own).
    conn.execute("SET statement_timeout = '300ms'").await?;
    let e = sqlx::query("SELECT pg_sleep(20)").execute(&mut conn).await.expect_err("timed out");
    out!("timeout {}", err_line(&e));
    conn.execute("RESET statement_timeout").await?;
    out!("after timeout {}", sqlx::query_scalar::<_, String>("SELECT 'ok'").fetch_one(&mut conn).await?);

    // 9. LISTEN/NOTIFY between two connections (PgListener).
    let mut listener = PgListener::connect_with(&sqlx::PgPool::connect_lazy_with(opts.clone())).await?;
    listener.listen("events").await?;
    sqlx::query("SELECT pg_notify('events', $1)").bind("hello").execute(&mut conn).await?;
    let note = tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv()).await??;
    out!("notify {} {}", note.channel(), note.payload());
    listener.unlisten_all().await?;
    conn.close().await?;
    Ok(())
}
