package hsd.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.code.hs4j.FindOperator;
import com.google.code.hs4j.exception.HandlerSocketException;
import com.google.code.hs4j.impl.HSClientImpl;

import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * hs4j against an hsd started with --plain-secret / --plain-secret-wr
 * (compat/run.sh starts one; its ports come in hsd.authPort/hsd.authPortWr).
 */
class Hs4jAuthTest {
    private static final String[] COLS = {"k", "v"};

    @BeforeEach
    void needsAuthServer() {
        assumeTrue(Hsd.authPort() != 0 && Hsd.authPortWr() != 0,
                "no hsd with secrets (set hsd.authPort, hsd.authPortWr, hsd.secret, hsd.secretWr)");
    }

    private static HSClientImpl client(int port, int pool) throws Exception {
        return (HSClientImpl) Hsd.client(port, pool);
    }

    private static void assertUnauth(HSClientImpl c) {
        HandlerSocketException e = assertThrows(HandlerSocketException.class,
                () -> c.openIndex(1, Hsd.db(), "emp", "PRIMARY", new String[] {"ename"}));
        assertTrue(e.getMessage().endsWith("unauth"), e.getMessage());
    }

    @Test
    void withoutAuthEveryRequestIsRefused() throws Exception {
        for (int port : new int[] {Hsd.authPort(), Hsd.authPortWr()}) {
            HSClientImpl c = client(port, 1);
            try {
                assertUnauth(c);
            } finally {
                c.shutdown();
            }
        }
    }

    @Test
    void readPortWithItsSecret() throws Exception {
        HSClientImpl c = client(Hsd.authPort(), 2);
        try {
            assertNull(AuthCommand.authenticate(c, Hsd.secret()));
            assertTrue(c.openIndex(1, Hsd.db(), "emp", "PRIMARY", new String[] {"ename"}));
            for (int i = 0; i < 4; i++) { // both pooled connections
                assertEquals(List.of("KING"), Hsd.firstColumn(c.find(1, new String[] {"9"})));
            }
        } finally {
            c.shutdown();
        }
    }

    @Test
    void writePortWithItsSecret() throws Exception {
        HSClientImpl c = client(Hsd.authPortWr(), 1);
        try {
            assertNull(AuthCommand.authenticate(c, Hsd.secretWr()));
            assertTrue(c.openIndex(1, Hsd.db(), "kv", "PRIMARY", COLS));
            assertTrue(c.insert(1, new String[] {"auth1", "written"}));
            assertEquals(List.of("auth1|written"), Hsd.rows(c.find(1, new String[] {"auth1"}), 2));
            assertEquals(1, c.update(1, new String[] {"auth1"}, new String[] {"auth1", "again"}, FindOperator.EQ));
            assertEquals(1, c.delete(1, new String[] {"auth1"}));
        } finally {
            c.shutdown();
        }
    }

    @Test
    void wrongSecretAndTheOtherPortsSecretAreRefused() throws Exception {
        HSClientImpl c = client(Hsd.authPort(), 1);
        try {
            String err = AuthCommand.authenticate(c, "wrong-" + Hsd.secret());
            assertTrue(err != null && err.endsWith("unauth"), String.valueOf(err));
            assertUnauth(c);
            // Each listener has its own secret.
            if (!Hsd.secret().equals(Hsd.secretWr())) {
                err = AuthCommand.authenticate(c, Hsd.secretWr());
                assertTrue(err != null && err.endsWith("unauth"), String.valueOf(err));
                assertUnauth(c);
            }
            // A later right secret authenticates the same connection.
            assertNull(AuthCommand.authenticate(c, Hsd.secret()));
            assertTrue(c.openIndex(1, Hsd.db(), "emp", "PRIMARY", new String[] {"ename"}));
        } finally {
            c.shutdown();
        }
        HSClientImpl w = client(Hsd.authPortWr(), 1);
        try {
            if (!Hsd.secret().equals(Hsd.secretWr())) {
                String err = AuthCommand.authenticate(w, Hsd.secret());
                assertTrue(err != null && err.endsWith("unauth"), String.valueOf(err));
            }
            assertUnauth(w);
        } finally {
            w.shutdown();
        }
    }
}
