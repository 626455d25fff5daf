// pgjdbc's scenario of the client suite (crates/ferrogres/tests/clients.rs).
//
// Usage: java -cp /usr/share/java/postgresql.jar Scenario.java HOST PORT USER DBNAME SOCKETDIR
//
// Prints a transcript of what pgjdbc decoded (text format, and binary transfer for
// prepared statements after prepareThreshold uses), its errors' fields and its
// DatabaseMetaData; the test compares it with the run against PostgreSQL 15.
import java.io.StringReader;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.copy.CopyManager;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

public class Scenario {
    static void out(Object... parts) {
        StringBuilder b = new StringBuilder();
        for (Object p : parts) {
            if (b.length() > 0) b.append(' ');
            b.append(show(p));
        }
        System.out.println(b);
    }

    static String show(Object v) {
        if (v == null) return "null";
        if (v instanceof byte[]) return "bytes" + Arrays.toString((byte[]) v);
        if (v instanceof Array) {
            try { return "array" + Arrays.deepToString((Object[]) ((Array) v).getArray()); }
            catch (SQLException e) { return "array<" + e.getSQLState() + ">"; }
        }
        if (v instanceof String) return (String) v;
        return v.getClass().getSimpleName() + ":" + v;
    }

    static String err(SQLException e) {
        String s = e.getSQLState() + " ";
        if (e instanceof PSQLException && ((PSQLException) e).getServerErrorMessage() != null) {
            ServerErrorMessage m = ((PSQLException) e).getServerErrorMessage();
            s += m.getMessage() + " detail=" + m.getDetail() + " schema=" + m.getSchema() + " table=" + m.getTable()
                + " column=" + m.getColumn() + " constraint=" + m.getConstraint();
        } else {
            s += e.getMessage();
        }
        return s;
    }

    static void rows(String label, ResultSet rs, String... cols) throws SQLException {
        List<String> lines = new ArrayList<>();
        while (rs.next()) {
            StringBuilder b = new StringBuilder();
            for (String c : cols) b.append(c).append('=').append(show(rs.getObject(c))).append(' ');
            lines.add(b.toString().trim());
        }
        rs.close();
        Collections.sort(lines);
        for (String l : lines) out(label, l);
    }

    public static void main(String[] a) throws Exception {
        String host = a[0], port = a[1], user = a[2], db = a[3], sockdir = a[4];
        String url = "jdbc:postgresql://" + host + ":" + port + "/" + db;
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("prepareThreshold", "1");
        props.setProperty("options", "-c TimeZone=UTC");
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));

        // 1. Connect over TCP (pgjdbc has no unix socket transport without a
        // junixsocket factory, which Debian does not package).
        try (Connection c = DriverManager.getConnection(url, props); Statement st = c.createStatement()) {
            ResultSet rs = st.executeQuery("SELECT 1 + 1");
            rs.next();
            out("tcp", rs.getInt(1));
            out("autocommit", c.getAutoCommit(), "isolation", c.getTransactionIsolation(), "readonly", c.isReadOnly());
        }

        Connection conn = DriverManager.getConnection(url, props);
        Statement st = conn.createStatement();

        // 2. Round trip of the common types (the second execution of a prepared
        // statement uses binary transfer).
        st.execute("CREATE TABLE types (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, "
            + "f8 float8, t text, vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp, tstz timestamptz, "
            + "iv interval, u uuid, j json, jb jsonb, ia int4[], ta text[])");
        PreparedStatement ins = conn.prepareStatement("INSERT INTO types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            + "?::interval, ?, ?::json, ?::jsonb, ?, ?)");
        for (int id = 1; id <= 2; id++) {
            ins.setInt(1, id);
            ins.setShort(2, (short) 12);
            ins.setInt(3, -345678);
            ins.setLong(4, 9007199254740993L);
            ins.setBigDecimal(5, new BigDecimal("12345.678900"));
            ins.setFloat(6, 1.5f);
            ins.setDouble(7, -2.25);
            ins.setString(8, "héllo wörld");
            ins.setString(9, "varchar");
            ins.setBoolean(10, true);
            ins.setBytes(11, new byte[] {0, 1, (byte) 0xfe, (byte) 0xff});
            ins.setDate(12, java.sql.Date.valueOf("2024-02-29"));
            ins.setTime(13, java.sql.Time.valueOf("13:14:15"));
            ins.setTimestamp(14, java.sql.Timestamp.valueOf("2024-01-02 03:04:05.678"));
            ins.setObject(15, java.time.OffsetDateTime.parse("2024-06-07T08:09:10Z"));
            ins.setString(16, "3 days 04:05:06");
            ins.setObject(17, UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
            ins.setString(18, "{\"a\": 1}");
            ins.setString(19, "{\"k\": \"v\"}");
            ins.setArray(20, conn.createArrayOf("int4", new Integer[] {1, 2, null}));
            ins.setArray(21, conn.createArrayOf("text", new String[] {"x", "y z", ""}));
            out("insert", ins.executeUpdate());
        }
        st.execute("INSERT INTO types (id) VALUES (3)");
        PreparedStatement sel = conn.prepareStatement("SELECT * FROM types WHERE id = ?");
        for (int round = 0; round < 2; round++) {
            for (int id = 1; id <= 3; id += 2) {
                sel.setInt(1, id);
                ResultSet rs = sel.executeQuery();
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    StringBuilder b = new StringBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        b.append(md.getColumnName(i)).append(':').append(md.getColumnTypeName(i)).append('=');
                        b.append(show(rs.getObject(i))).append(' ');
                    }
                    out("round", round, b.toString().trim());
                }
            }
        }
        ResultSet rs = st.executeQuery("SELECT i8, n, tstz, d FROM types WHERE id = 1");
        rs.next();
        out("getters", rs.getLong(1), rs.getBigDecimal(2), rs.getObject(3, java.time.OffsetDateTime.class),
            rs.getObject(4, java.time.LocalDate.class), rs.getString(3));

        // 3. Transactions and savepoints.
        st.execute("CREATE TABLE tx (v int)");
        conn.setAutoCommit(false);
        st.execute("INSERT INTO tx VALUES (1)");
        Savepoint sp = conn.setSavepoint("s1");
        st.execute("INSERT INTO tx VALUES (2)");
        conn.rollback(sp);
        st.execute("INSERT INTO tx VALUES (3)");
        conn.commit();
        st.execute("INSERT INTO tx VALUES (4)");
        try { st.execute("SELECT 1/0"); } catch (SQLException e) { out("in transaction:", err(e)); }
        conn.rollback();
        conn.setAutoCommit(true);
        rs = st.executeQuery("SELECT array_agg(v ORDER BY v) FROM tx");
        rs.next();
        out("tx", rs.getArray(1));

        // 4. Constraint errors with their fields; the session goes on.
        st.execute("CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE)");
        st.execute("CREATE TABLE child (id serial PRIMARY KEY, pid int NOT NULL REFERENCES parent(id) ON DELETE CASCADE, "
            + "qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL)");
        st.execute("CREATE INDEX child_note_idx ON child (note)");
        st.execute("INSERT INTO parent VALUES (1, 'one')");
        for (String q : new String[] {"INSERT INTO parent VALUES (1, 'uno')", "INSERT INTO child (pid, qty, note) VALUES (99, 1, 'n')",
                                      "INSERT INTO child (pid, qty, note) VALUES (1, 0, 'n')", "INSERT INTO child (pid, qty, note) VALUES (1, 1, NULL)"}) {
            try { st.execute(q); out("no error:", q); } catch (SQLException e) { out("error", err(e)); }
        }
        PreparedStatement gk = conn.prepareStatement("INSERT INTO child (pid, qty, note) VALUES (1, 5, 'ok')", Statement.RETURN_GENERATED_KEYS);
        gk.executeUpdate();
        rs = gk.getGeneratedKeys();
        rs.next();
        out("generated key", rs.getInt("id"));

        // 5. A 10,000-row result, and a cursor read in chunks (fetch size in a
        // transaction: pgjdbc runs the portal with a row limit).
        rs = st.executeQuery("SELECT g, md5(g::text) FROM generate_series(1, 10000) g");
        long n = 0, sum = 0;
        String last = null;
        while (rs.next()) { n++; sum += rs.getInt(1); last = rs.getString(2); }
        out("rows", n, sum, last);
        conn.setAutoCommit(false);
        Statement fs = conn.createStatement();
        fs.setFetchSize(700);
        rs = fs.executeQuery("SELECT g FROM generate_series(1, 2000) g");
        n = 0; sum = 0;
        while (rs.next()) { n++; sum += rs.getInt(1); }
        out("fetch size", n, sum);
        conn.commit();
        conn.setAutoCommit(true);

        // 6. COPY in and out (text) through the CopyManager.
        CopyManager cm = ((PGConnection) conn).getCopyAPI();
        st.execute("CREATE TABLE cp (a int, b text)");
        out("copy in", cm.copyIn("COPY cp FROM STDIN", new StringReader("1\tone\n2\t\\N\n3\tthree\n")));
        StringWriter w = new StringWriter();
        out("copy out", cm.copyOut("COPY (SELECT * FROM cp ORDER BY a) TO STDOUT WITH (FORMAT csv)", w));
        out("copy data", w.toString().replace("\n", "|"));

        // 7. Cancel (Statement.cancel sends a cancel request) and a query timeout,
        // then statement_timeout.
        Statement sleeper = conn.createStatement();
        Thread t = new Thread(() -> {
            try { Thread.sleep(500); sleeper.cancel(); } catch (Exception e) { throw new RuntimeException(e); }
        });
        t.start();
        try { sleeper.execute("SELECT pg_sleep(20)"); out("no cancel"); } catch (SQLException e) { out("cancel", err(e)); }
        t.join();
        st.execute("SET statement_timeout = '300ms'");
        try { st.execute("SELECT pg_sleep(20)"); out("no timeout"); } catch (SQLException e) { out("timeout", err(e)); }
        st.execute("RESET statement_timeout");

        // 8. LISTEN / NOTIFY between two connections.
        Connection listener = DriverManager.getConnection(url, props);
        listener.createStatement().execute("LISTEN jobs");
        st.execute("NOTIFY jobs, 'hello'");
        st.execute("SELECT pg_notify('jobs', 'again')");
        List<String> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 10000;
        while (got.size() < 2 && System.currentTimeMillis() < deadline) {
            PGNotification[] ns = listener.unwrap(PGConnection.class).getNotifications(1000);
            if (ns != null) for (PGNotification x : ns) got.add(x.getName() + ":" + x.getParameter());
        }
        out("notifies", got);
        listener.close();

        // 9. DatabaseMetaData.
        DatabaseMetaData md = conn.getMetaData();
        out("product", md.getDatabaseProductName(), "driver major", md.getDriverMajorVersion());
        rows("table", md.getTables(null, "public", "%", new String[] {"TABLE", "VIEW"}), "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE");
        rows("column", md.getColumns(null, "public", "child", "%"), "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME",
            "COLUMN_SIZE", "NULLABLE", "COLUMN_DEF", "ORDINAL_POSITION", "IS_AUTOINCREMENT");
        rows("column", md.getColumns(null, "public", "types", "%"), "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME",
            "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE");
        rows("imported", md.getImportedKeys(null, "public", "child"), "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME",
            "FKCOLUMN_NAME", "KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME");
        rows("exported", md.getExportedKeys(null, "public", "parent"), "FKTABLE_NAME", "FKCOLUMN_NAME", "FK_NAME");
        // getPrimaryKeys and getIndexInfo select fields of the records of
        // `information_schema._pg_expandarray(i.indkey)`.
        rows("pk", md.getPrimaryKeys(null, "public", "child"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
        rows("pk", md.getPrimaryKeys(null, "public", "parent"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
        rows("index", md.getIndexInfo(null, "public", "child", false, false), "TABLE_NAME", "NON_UNIQUE", "INDEX_NAME",
            "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC", "FILTER_CONDITION");
        rows("index", md.getIndexInfo(null, "public", "parent", true, false), "TABLE_NAME", "NON_UNIQUE", "INDEX_NAME",
            "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC");
        // A key whose columns are not in table order: KEY_SEQ and ORDINAL_POSITION follow the key.
        st.execute("CREATE TABLE pair (a int, b int, c int, PRIMARY KEY (b, a))");
        st.execute("CREATE INDEX pair_c_a_idx ON pair (c DESC, a)");
        rows("pk", md.getPrimaryKeys(null, "public", "pair"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
        rows("index", md.getIndexInfo(null, "public", "pair", false, false), "INDEX_NAME", "NON_UNIQUE", "ORDINAL_POSITION",
            "COLUMN_NAME", "ASC_OR_DESC");
        rs = st.executeQuery("SELECT * FROM child");
        ResultSetMetaData rmd = rs.getMetaData();
        for (int i = 1; i <= rmd.getColumnCount(); i++) {
            out("rsmd", rmd.getColumnName(i), rmd.getColumnTypeName(i), rmd.isAutoIncrement(i), rmd.isNullable(i),
                rmd.getTableName(i));
        }
        conn.close();
        out("done");
    }
}
