-- Tables for the third-party client tests (compat/java, compat/node).
-- compat/run.sh loads this file into a fresh database per client
-- (hscompat_java, hscompat_node) on the embedded store (hsd sql) or on
-- MariaDB (mariadb client), replacing @AUTOINC_PK@ with the backend's
-- auto-increment primary key type. Keep it portable: SQLite and MariaDB.

-- The classic EMP table, read-only for the tests: unique secondary index on
-- empno, a composite non-unique index on (dept, sal) with ties (WARD/MARTIN,
-- SCOTT/FORD), NULL and empty-string notes.
CREATE TABLE emp (
  id INTEGER NOT NULL PRIMARY KEY,
  empno INTEGER NOT NULL,
  ename VARCHAR(32),
  dept INTEGER,
  sal INTEGER,
  note VARCHAR(255)
);
CREATE UNIQUE INDEX emp_empno ON emp (empno);
CREATE INDEX emp_dept_sal ON emp (dept, sal);
INSERT INTO emp (id, empno, ename, dept, sal, note) VALUES
  (1, 7369, 'SMITH', 20, 800, NULL),
  (2, 7499, 'ALLEN', 30, 1600, 'sales'),
  (3, 7521, 'WARD', 30, 1250, 'sales'),
  (4, 7566, 'JONES', 20, 2975, NULL),
  (5, 7654, 'MARTIN', 30, 1250, 'sales'),
  (6, 7698, 'BLAKE', 30, 2850, NULL),
  (7, 7782, 'CLARK', 10, 2450, NULL),
  (8, 7788, 'SCOTT', 20, 3000, ''),
  (9, 7839, 'KING', 10, 5000, 'boss'),
  (10, 7844, 'TURNER', 30, 1500, 'sales'),
  (11, 7876, 'ADAMS', 20, 1100, NULL),
  (12, 7900, 'JAMES', 30, 950, NULL),
  (13, 7902, 'FORD', 20, 3000, NULL),
  (14, 7934, 'MILLER', 10, 1300, NULL);

-- Key/value rows the write tests create, change and delete; each test uses
-- its own key prefix.
CREATE TABLE kv (
  k VARCHAR(64) NOT NULL PRIMARY KEY,
  v VARCHAR(255),
  n INTEGER
);

-- Inserts that get an auto-increment id.
CREATE TABLE seq (
  id @AUTOINC_PK@,
  name VARCHAR(64)
);

-- increment / decrement.
CREATE TABLE counter (
  id INTEGER NOT NULL PRIMARY KEY,
  hits INTEGER,
  score INTEGER
);
INSERT INTO counter (id, hits, score) VALUES (1, 0, 0), (2, 10, 5), (3, NULL, 7);

-- Many client threads at once; each owns the ids worker*100000 + i.
CREATE TABLE conc (
  id INTEGER NOT NULL PRIMARY KEY,
  worker INTEGER NOT NULL,
  val VARCHAR(64)
);
CREATE INDEX conc_worker ON conc (worker, id);
