package hsd.compat;

import static com.google.code.hs4j.FindOperator.EQ;
import static com.google.code.hs4j.FindOperator.GE;
import static com.google.code.hs4j.FindOperator.GT;
import static com.google.code.hs4j.FindOperator.LE;
import static com.google.code.hs4j.FindOperator.LT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.code.hs4j.HSClient;
import com.google.code.hs4j.IndexSession;
import com.google.code.hs4j.exception.HandlerSocketException;

import java.sql.ResultSet;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Finds through hs4j on hsd's read port: every operator, limit/offset, indexes, errors. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class Hs4jReadTest {
    private static final String[] EMP = {"id", "empno", "ename", "dept", "sal"};
    private HSClient c;
    private String db;

    @BeforeAll
    void connect() throws Exception {
        c = Hsd.reader();
        db = Hsd.db();
        assertTrue(c.openIndex(1, db, "emp", "PRIMARY", EMP));
        assertTrue(c.openIndex(2, db, "emp", "emp_empno", new String[] {"empno", "ename"}));
        assertTrue(c.openIndex(3, db, "emp", "emp_dept_sal", new String[] {"id", "ename"}));
    }

    @AfterAll
    void close() throws Exception {
        c.shutdown();
    }

    private List<String> ids(int index, String[] keys, com.google.code.hs4j.FindOperator op, int limit, int offset)
            throws Exception {
        return Hsd.firstColumn(c.find(index, keys, op, limit, offset));
    }

    @Test
    void findEqualOnPrimaryKey() throws Exception {
        ResultSet rs = c.find(1, new String[] {"7"});
        assertTrue(rs.next());
        assertEquals(7, rs.getInt("id"));
        assertEquals(7782, rs.getInt("empno"));
        assertEquals("CLARK", rs.getString("ename"));
        assertEquals(10, rs.getInt(4));
        assertEquals(2450L, rs.getLong("sal"));
        assertFalse(rs.next());
    }

    @Test
    void wholeRowsComeBackInOpenedColumnOrder() throws Exception {
        assertEquals(List.of("9|7839|KING|10|5000"), Hsd.rows(c.find(1, new String[] {"9"}), 5));
        assertTrue(c.openIndex(4, db, "emp", "PRIMARY", new String[] {"sal", "ename", "id"}));
        assertEquals(List.of("5000|KING|9"), Hsd.rows(c.find(4, new String[] {"9"}), 3));
    }

    @Test
    void everyOperatorOnThePrimaryKey() throws Exception {
        assertEquals(List.of("3"), ids(1, new String[] {"3"}, EQ, 10, 0));
        assertEquals(List.of("13", "14"), ids(1, new String[] {"12"}, GT, 10, 0));
        assertEquals(List.of("12", "13", "14"), ids(1, new String[] {"12"}, GE, 10, 0));
        assertEquals(List.of("2", "1"), ids(1, new String[] {"3"}, LT, 10, 0));
        assertEquals(List.of("3", "2", "1"), ids(1, new String[] {"3"}, LE, 10, 0));
    }

    @Test
    void limitAndOffset() throws Exception {
        assertEquals(List.of("3", "4", "5"), ids(1, new String[] {"1"}, GE, 3, 2));
        assertEquals(List.of("13", "12"), ids(1, new String[] {"14"}, LE, 2, 1));
        assertEquals(List.of("14"), ids(1, new String[] {"1"}, GE, 5, 13));
        assertEquals(List.of(), ids(1, new String[] {"1"}, GE, 5, 14));
        // HandlerSocket quirk: a limit of 0 means 1.
        assertEquals(List.of("5"), ids(1, new String[] {"5"}, GE, 0, 0));
        // hs4j's short form is limit 1, offset 0.
        assertEquals(List.of("5"), Hsd.firstColumn(c.find(1, new String[] {"5"})));
    }

    @Test
    void noMatchIsAnEmptyResult() throws Exception {
        ResultSet rs = c.find(1, new String[] {"99"});
        assertNotNull(rs);
        assertFalse(rs.next());
        assertEquals(List.of(), ids(1, new String[] {"14"}, GT, 10, 0));
        assertEquals(List.of(), ids(1, new String[] {"1"}, LT, 10, 0));
    }

    @Test
    void uniqueSecondaryIndex() throws Exception {
        assertEquals(List.of("7839|KING"), Hsd.rows(c.find(2, new String[] {"7839"}), 2));
        assertEquals(List.of("7902|FORD", "7934|MILLER"),
                Hsd.rows(c.find(2, new String[] {"7900"}, GT, 10, 0), 2));
        assertEquals(List.of("7369|SMITH"), Hsd.rows(c.find(2, new String[] {"7499"}, LT, 10, 0), 2));
    }

    @Test
    void compositeIndexWithOneAndTwoKeyColumns() throws Exception {
        // dept 30 in salary order; WARD and MARTIN tie at 1250 (then primary key order).
        assertEquals(List.of("12|JAMES", "3|WARD", "5|MARTIN", "10|TURNER", "2|ALLEN", "6|BLAKE"),
                Hsd.rows(c.find(3, new String[] {"30"}, EQ, 10, 0), 2));
        assertEquals(List.of("8|SCOTT", "13|FORD"),
                Hsd.rows(c.find(3, new String[] {"20", "3000"}, EQ, 10, 0), 2));
        assertEquals(List.of("8", "13", "12", "3"), ids(3, new String[] {"20", "3000"}, GE, 4, 0));
        assertEquals(List.of("12", "3"), ids(3, new String[] {"20", "3000"}, GT, 2, 0));
        assertEquals(List.of("9", "7", "14"), ids(3, new String[] {"20"}, LT, 3, 0));
        assertEquals(List.of("11", "1", "9", "7", "14"), ids(3, new String[] {"20", "1100"}, LE, 10, 0));
        assertEquals(List.of("1", "9"), ids(3, new String[] {"20", "1100"}, LT, 2, 0));
    }

    @Test
    void indexSessionApi() throws Exception {
        IndexSession s = c.openIndexSession(5, db, "emp", "PRIMARY", new String[] {"ename"});
        assertNotNull(s);
        assertEquals(List.of("TURNER"), Hsd.firstColumn(s.find(new String[] {"10"})));
        assertEquals(List.of("TURNER", "ADAMS"), Hsd.firstColumn(s.find(new String[] {"10"}, GE, 2, 0)));
    }

    @Test
    void emptyStringAndNullStayDifferent() throws Exception {
        assertTrue(c.openIndex(6, db, "emp", "PRIMARY", new String[] {"ename", "note"}));
        ResultSet rs = c.find(6, new String[] {"8"});
        assertTrue(rs.next());
        assertEquals("", rs.getString("note"));
        rs = c.find(6, new String[] {"1"});
        assertTrue(rs.next());
        // hsd sends NULL as the single byte 0x00; hs4j 0.1 has no NULL of its own and
        // hands that byte over as a one-character string (see docs/compatibility.md).
        assertEquals("\0", rs.getString("note"));
        rs = c.find(6, new String[] {"9"});
        assertTrue(rs.next());
        assertEquals("boss", rs.getString("note"));
    }

    @Test
    void reopeningAnIdReplacesIt() throws Exception {
        assertTrue(c.openIndex(7, db, "emp", "PRIMARY", new String[] {"ename"}));
        assertEquals(List.of("KING"), Hsd.firstColumn(c.find(7, new String[] {"9"})));
        assertTrue(c.openIndex(7, db, "emp", "emp_empno", new String[] {"id"}));
        assertEquals(List.of("9"), Hsd.firstColumn(c.find(7, new String[] {"7839"})));
    }

    @Test
    void openIndexErrors() {
        HandlerSocketException e = assertThrows(HandlerSocketException.class,
                () -> c.openIndex(20, db, "no_such_table", "PRIMARY", new String[] {"id"}));
        assertTrue(e.getMessage().endsWith("open_table"), e.getMessage());
        e = assertThrows(HandlerSocketException.class,
                () -> c.openIndex(21, db, "emp", "no_such_index", new String[] {"id"}));
        assertTrue(e.getMessage().endsWith("idxnum"), e.getMessage());
        e = assertThrows(HandlerSocketException.class,
                () -> c.openIndex(22, db, "emp", "PRIMARY", new String[] {"id", "no_such_column"}));
        assertTrue(e.getMessage().endsWith("fld"), e.getMessage());
    }

    @Test
    void findErrors() throws Exception {
        // More key columns than the index has.
        HandlerSocketException e = assertThrows(HandlerSocketException.class,
                () -> c.find(1, new String[] {"1", "2"}, EQ, 1, 0));
        assertTrue(e.getMessage().endsWith("kpnum"), e.getMessage());
        // The connection stays usable after an error.
        assertEquals(List.of("1"), Hsd.firstColumn(c.find(1, new String[] {"1"})));
    }

    @Test
    void writesAreRefusedOnTheReadPort() throws Exception {
        assertTrue(c.openIndex(8, db, "kv", "PRIMARY", new String[] {"k", "v"}));
        HandlerSocketException e = assertThrows(HandlerSocketException.class,
                () -> c.insert(8, new String[] {"ro", "x"}));
        assertTrue(e.getMessage().endsWith("readonly"), e.getMessage());
        e = assertThrows(HandlerSocketException.class,
                () -> c.update(8, new String[] {"ro"}, new String[] {"ro", "y"}, EQ));
        assertTrue(e.getMessage().endsWith("readonly"), e.getMessage());
        e = assertThrows(HandlerSocketException.class, () -> c.delete(8, new String[] {"ro"}));
        assertTrue(e.getMessage().endsWith("readonly"), e.getMessage());
    }
}
