package hsd.compat;

import com.google.code.hs4j.command.text.AbstractCommand;
import com.google.code.hs4j.impl.HSClientImpl;
import com.google.code.hs4j.network.buffer.IoBuffer;
import com.google.code.hs4j.network.core.Session;

import java.util.concurrent.TimeUnit;

/**
 * HandlerSocket's `A 1 <secret>` request as an hs4j Command. hs4j 0.1 has no
 * auth call of its own (it predates HandlerSocket's auth); an application that
 * needs one writes this command on each of the client's pooled connections
 * with hs4j's public Command/Session API, as {@link #authenticate} does. The
 * library itself is used unchanged.
 */
final class AuthCommand extends AbstractCommand {
    private final String secret;

    AuthCommand(String secret) {
        this.secret = secret;
    }

    @Override
    public void encode() {
        IoBuffer buf = IoBuffer.allocate(8 + secret.length() * 4);
        buf.setAutoExpand(true);
        writeToken(buf, "A");
        writeTokenSeparator(buf);
        writeToken(buf, "1");
        writeTokenSeparator(buf);
        writeToken(buf, secret);
        writeCommandTerminate(buf);
        buf.flip();
        this.buffer = buf;
    }

    /**
     * Authenticates every connection of the client; returns null when all
     * succeeded, else the first error message hs4j reported.
     */
    static String authenticate(HSClientImpl client, String secret) throws InterruptedException {
        for (Session session : client.getConnector().getSessionList()) {
            AuthCommand cmd = new AuthCommand(secret);
            session.write(cmd);
            if (!cmd.await(10, TimeUnit.SECONDS)) {
                return "timeout";
            }
            if (cmd.getExceptionMessage() != null) {
                return cmd.getExceptionMessage();
            }
            if (cmd.getResponseStatus() != 0) {
                return "status " + cmd.getResponseStatus();
            }
        }
        return null;
    }
}
