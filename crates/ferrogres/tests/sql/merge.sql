--
-- MERGE (cases in the spirit of PostgreSQL's merge.sql)
--
CREATE TABLE target (tid integer, balance integer);
CREATE TABLE source (sid integer, delta integer);
INSERT INTO target VALUES (1, 10), (2, 20), (3, 30);
-- empty source: nothing happens
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN DELETE;
INSERT INTO source VALUES (2, 5), (3, 20), (4, 40);
SELECT * FROM source ORDER BY sid;
-- insert only
BEGIN;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN NOT MATCHED THEN INSERT VALUES (s.sid, s.delta);
SELECT * FROM target ORDER BY tid;
ROLLBACK;
-- update only
BEGIN;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET balance = t.balance + s.delta;
SELECT * FROM target ORDER BY tid;
ROLLBACK;
-- delete only
BEGIN;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN DELETE;
SELECT * FROM target ORDER BY tid;
ROLLBACK;
-- all together, with conditions and DO NOTHING
BEGIN;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED AND t.balance > 25 THEN DELETE
WHEN MATCHED THEN UPDATE SET balance = t.balance + s.delta
WHEN NOT MATCHED AND s.delta > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (tid) VALUES (s.sid);
SELECT * FROM target ORDER BY tid;
ROLLBACK;
BEGIN;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED AND s.delta = 5 THEN DO NOTHING
WHEN MATCHED THEN UPDATE SET balance = DEFAULT
WHEN NOT MATCHED THEN INSERT (balance, tid) VALUES (s.delta * 2, s.sid + 100);
SELECT * FROM target ORDER BY tid;
ROLLBACK;
-- a source subquery and a VALUES source
MERGE INTO target t USING (SELECT sid, delta FROM source WHERE delta < 30) AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET balance = s.delta;
SELECT * FROM target ORDER BY tid;
MERGE INTO target USING (VALUES (1, 1), (9, 9)) AS v(k, x) ON target.tid = v.k
WHEN MATCHED THEN UPDATE SET balance = target.balance + v.x
WHEN NOT MATCHED THEN INSERT VALUES (v.k, v.x);
SELECT * FROM target ORDER BY tid;
-- a target row matched twice
INSERT INTO source VALUES (2, 6);
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET balance = t.balance + s.delta;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN DELETE;
-- matched twice, but only changed once: fine
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED AND s.delta = 6 THEN UPDATE SET balance = 0
WHEN MATCHED THEN DO NOTHING;
SELECT * FROM target ORDER BY tid;
-- errors
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET nope = 1;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET balance = nope;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN NOT MATCHED THEN INSERT VALUES (1, 2, 3);
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN NOT MATCHED THEN INSERT (tid, balance) VALUES (1);
MERGE INTO target t USING nosuch AS s ON t.tid = s.sid
WHEN MATCHED THEN DELETE;
MERGE INTO target t USING source AS s ON t.tid = s.sid
WHEN MATCHED THEN UPDATE SET balance = 'x';
-- constraints apply
CREATE TABLE pk (k int primary key, v text not null);
INSERT INTO pk VALUES (1, 'one');
MERGE INTO pk USING (VALUES (1, 'uno'), (2, 'two')) AS v(k, v) ON pk.k = v.k
WHEN MATCHED THEN UPDATE SET v = v.v
WHEN NOT MATCHED THEN INSERT VALUES (v.k, v.v);
SELECT * FROM pk ORDER BY k;
MERGE INTO pk USING (VALUES (3, NULL)) AS v(k, v) ON pk.k = v.k
WHEN NOT MATCHED THEN INSERT VALUES (v.k, v.v);
MERGE INTO pk USING (VALUES (5, 'x')) AS v(k, v) ON pk.k = v.k + 4
WHEN NOT MATCHED THEN INSERT VALUES (1, v.v);
SELECT * FROM pk ORDER BY k;
DROP TABLE target, source, pk;
