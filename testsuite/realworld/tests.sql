-- tests.sql - the sqlite3 shell workload of the real-projects tier
-- (testsuite/realworld/run).  The runner replaces the line
-- "-- @INSERTS@" with N separate INSERT statements (10000; 2000 with --quick)
-- inside one transaction.  Output must not depend on time or addresses.
.headers on
.mode list
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, grp INTEGER, price REAL);
CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT UNIQUE);
CREATE INDEX item_grp ON item(grp);
BEGIN;
-- @INSERTS@
COMMIT;
INSERT INTO grp(id, label) SELECT DISTINCT grp, 'group-' || grp FROM item;
SELECT count(*) AS n, sum(price) AS total, min(name) AS first, max(name) AS last FROM item;
SELECT g.label, count(*) AS n, round(avg(i.price), 3) AS avg_price
  FROM item i JOIN grp g ON g.id = i.grp GROUP BY g.label ORDER BY g.label LIMIT 10;
SELECT grp, count(*) FROM item GROUP BY grp HAVING count(*) > 0 ORDER BY 2 DESC, 1 LIMIT 5;
SELECT id, name, price,
       rank() OVER (PARTITION BY grp ORDER BY price DESC, id) AS rk,
       sum(price) OVER (PARTITION BY grp ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS run3
  FROM item WHERE grp = 7 ORDER BY id LIMIT 12;
SELECT grp, round(price, 2), lag(id) OVER w, lead(id) OVER w, row_number() OVER w
  FROM item WHERE id % 997 = 0 WINDOW w AS (ORDER BY id) ORDER BY id;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000)
  SELECT count(*), sum(x), total(x * x) FROM c;
SELECT a.id, b.id FROM item a JOIN item b ON b.id = a.id * 2 WHERE a.id BETWEEN 100 AND 105 ORDER BY a.id;
SELECT i.grp, count(DISTINCT substr(i.name, 1, 6)) FROM item i LEFT JOIN grp g ON g.id = i.grp + 1000
  WHERE g.id IS NULL GROUP BY i.grp ORDER BY i.grp LIMIT 3;
UPDATE item SET price = price * 2 WHERE grp = 3;
DELETE FROM item WHERE id % 10 = 0;
SELECT count(*), round(sum(price), 2) FROM item;
SELECT upper(name), length(name), instr(name, '9'), replace(name, 'item', 'x') FROM item ORDER BY id DESC LIMIT 3;
SELECT json_object('n', count(*), 'g', max(grp)) FROM item;
CREATE VIEW pricey AS SELECT * FROM item WHERE price > 900;
SELECT count(*) FROM pricey;
PRAGMA integrity_check;
