package hsd.compat;

import com.google.code.hs4j.HSClient;
import com.google.code.hs4j.impl.HSClientImpl;

import java.io.IOException;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the hsd under test listens, from the system properties compat/run.sh
 * sets (see pom.xml for the defaults), and small helpers to read results.
 * Everything else in these tests is plain hs4j 0.1 API.
 */
final class Hsd {
    private Hsd() {}

    static String host() {
        return prop("hsd.host", "127.0.0.1");
    }

    static int port() {
        return Integer.parseInt(prop("hsd.port", "9998"));
    }

    static int portWr() {
        return Integer.parseInt(prop("hsd.portWr", "9999"));
    }

    /** Read port of the hsd started with secrets; 0 when none runs. */
    static int authPort() {
        return Integer.parseInt(prop("hsd.authPort", "0"));
    }

    static int authPortWr() {
        return Integer.parseInt(prop("hsd.authPortWr", "0"));
    }

    static String secret() {
        return prop("hsd.secret", "");
    }

    static String secretWr() {
        return prop("hsd.secretWr", "");
    }

    /** The database holding compat/schema.sql's tables. */
    static String db() {
        return prop("hsd.db", "hscompat_java");
    }

    static String backend() {
        return prop("hsd.backend", "sqlite");
    }

    private static String prop(String name, String dflt) {
        String v = System.getProperty(name);
        return v == null || v.isEmpty() || v.startsWith("${") ? dflt : v;
    }

    static HSClient reader() throws IOException {
        return client(port(), 1);
    }

    static HSClient writer() throws IOException {
        return client(portWr(), 1);
    }

    static HSClient client(int port, int poolSize) throws IOException {
        HSClient c = new HSClientImpl(host(), port, poolSize);
        c.setOpTimeout(10_000);
        return c;
    }

    /** The rows of a result as "v1|v2|..." strings; hs4j hands NULL over as "\0". */
    static List<String> rows(ResultSet rs, int ncols) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            StringBuilder sb = new StringBuilder();
            for (int i = 1; i <= ncols; i++) {
                if (i > 1) {
                    sb.append('|');
                }
                sb.append(rs.getString(i));
            }
            out.add(sb.toString());
        }
        return out;
    }

    /** The first column of every row. */
    static List<String> firstColumn(ResultSet rs) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            out.add(rs.getString(1));
        }
        return out;
    }
}
