//! Logging a new link in: the handshake, TLS and authentication, the
//! server's version check, then the session settings every hsd connection
//! runs with (and, with replicas, GTID tracking or causal reads).

use super::errors::limits_connections;
use super::gtid_tracking::{tracking_off, Tracking};
use super::link::{Answer, Discard, Failure, FirstRow, Link, LinkSettings, Replicated};
use mysql_wire::auth::{AuthStep, Authenticator};
use mysql_wire::session_state;
use mysql_wire::{
    Capabilities, ErrPacket, Greeting, HandshakeResponse, PacketWriter, ServerVersion, SslMode,
};
use std::time::Duration;

/// utf8mb4_general_ci: the text hsd writes (SQL, names) is UTF-8.
const COLLATION_UTF8MB4: u8 = 45;

/// The oldest MySQL hsd serves: CAST(... AS DOUBLE), which the +/- read
/// of FLOAT columns uses, came in 8.0.17.
pub(super) const MIN_MYSQL: (u32, u32, u32) = (8, 0, 17);
/// The oldest MariaDB hsd is tested on.
pub(super) const MIN_MARIADB: (u32, u32, u32) = (10, 11, 0);

impl Link {
    pub(super) async fn login(&mut self, settings: &LinkSettings) -> Result<(), Failure> {
        let url = &settings.url;
        let (_, greeting) = self.packet().await?;
        if greeting.first() == Some(&0xff) {
            // "Too many connections" comes instead of the greeting.
            let e = ErrPacket::parse(&greeting);
            if limits_connections(e.code) {
                return Err(Failure::limited(&e));
            }
        }
        let greeting = Greeting::parse(&greeting).map_err(Failure::refused)?;
        if !greeting.capabilities.has(Capabilities::PROTOCOL_41) {
            return Err(Failure::refused(
                "the server is too old (no protocol 4.1)".into(),
            ));
        }
        self.server = greeting.server();
        check_version(&self.server, &greeting.server_version).map_err(Failure::refused)?;
        let offers_tls = greeting.capabilities.has(Capabilities::SSL);
        let use_tls = match settings.tls.mode {
            SslMode::Disabled => false,
            SslMode::Preferred => offers_tls,
            mode => {
                if !offers_tls {
                    return Err(Failure::refused(format!(
                        "ssl-mode={mode} but the server at {} does not offer TLS \
                         (configure its certificate, or lower ssl-mode)",
                        url.endpoint()
                    )));
                }
                true
            }
        };
        // A Unix socket is local: the server, like MySQL's own clients,
        // takes a password over it as over TLS.
        let secure = use_tls || url.options.socket.is_some();
        let mut auth = Authenticator::new(
            &greeting.auth_plugin,
            url.password.as_bytes(),
            &greeting.scramble,
            secure,
        )
        .with_key_policy(settings.keys.clone());
        let wanted = Capabilities::LONG_PASSWORD
            | Capabilities::FOUND_ROWS
            | Capabilities::LONG_FLAG
            | Capabilities::PROTOCOL_41
            | Capabilities::TRANSACTIONS
            | Capabilities::SECURE_CONNECTION
            | Capabilities::MULTI_RESULTS
            | Capabilities::PLUGIN_AUTH
            | Capabilities::PLUGIN_AUTH_LENENC
            | Capabilities::DEPRECATE_EOF;
        let mut caps =
            wanted & (greeting.capabilities.0 | Capabilities::FOUND_ROWS | Capabilities::LONG_FLAG);
        if settings.replicated.track_gtids
            && greeting
                .capabilities
                .has(session_state::CLIENT_SESSION_TRACK)
        {
            caps |= session_state::CLIENT_SESSION_TRACK;
            self.tracks_gtids = true;
        }
        if url.database.is_some() {
            caps |= Capabilities::CONNECT_WITH_DB;
        }
        if use_tls {
            caps |= Capabilities::SSL;
        }
        self.deprecate_eof = caps & Capabilities::DEPRECATE_EOF != 0;
        let first = auth.first_response().map_err(Failure::refused)?;
        let response = HandshakeResponse {
            capabilities: caps,
            user: &url.user,
            auth_response: &first,
            auth_plugin: auth.plugin(),
            database: url.database.as_deref(),
            collation: COLLATION_UTF8MB4,
        };
        let mut seq = 1;
        if use_tls {
            self.wbuf.clear();
            response.write_ssl_request(&mut self.wbuf);
            self.send().await?;
            self.start_tls(&settings.tls).await?;
            seq = 2;
        }
        self.wbuf.clear();
        response.write(&mut self.wbuf, seq);
        self.send().await?;
        loop {
            let (seq, p) = self.packet().await?;
            if p.first() == Some(&0xff) {
                let e = ErrPacket::parse(&p);
                if limits_connections(e.code) {
                    return Err(Failure::limited(&e));
                }
            }
            match auth.on_packet(&p) {
                Ok(AuthStep::Done) => return Ok(()),
                Ok(AuthStep::Wait) => {}
                Ok(AuthStep::Send(data)) => {
                    self.wbuf.clear();
                    let w = PacketWriter::begin(&mut self.wbuf, seq.wrapping_add(1));
                    self.wbuf.extend_from_slice(&data);
                    w.finish(&mut self.wbuf);
                    self.send().await?;
                }
                Err(message) => {
                    return Err(Failure::refused(format!(
                        "logging in as {}: {message}",
                        url.user
                    )))
                }
            }
        }
    }

    /// The settings every hsd connection runs with: non-strict like the
    /// original plugin; column values returned as stored, without character
    /// set conversion (the original answered with each column's own bytes);
    /// fresh reads; and the server's own time limits a little inside ours,
    /// so a slow statement reports the server's error and keeps the link.
    ///
    /// MariaDB bounds every statement (`max_statement_time`, seconds, error
    /// 1969). MySQL bounds only SELECTs (`max_execution_time`, milliseconds,
    /// error 3024); its writes wait at most `innodb_lock_wait_timeout` for a
    /// row lock (error 1205) and the link's own timeout for the rest. On
    /// both, a metadata lock (a table a DDL of another client holds) is
    /// waited for as long as a row lock (`lock_wait_timeout`, 1205 too):
    /// the server's default is a year, and statements queue behind a
    /// waiting DDL.
    ///
    /// CHECK constraints: the original wrote rows at the storage engine,
    /// below them, so on MariaDB hsd turns them off for its session
    /// (`check_constraint_checks`). MySQL has no such switch: there the
    /// server enforces them and a violating write answers 3819.
    pub(super) async fn set_up_session(&mut self, t: Duration) -> Result<(), Failure> {
        let lock_wait = (t.as_secs().max(2) - 1).max(1);
        let statement_time = t.saturating_sub((t / 4).min(Duration::from_millis(500)));
        let mut statements = vec![
            "SET NAMES utf8mb4".to_string(),
            format!(
                "SET SESSION sql_mode = '', autocommit = 1, character_set_results = NULL, \
                 innodb_lock_wait_timeout = {lock_wait}, lock_wait_timeout = {lock_wait}"
            ),
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
        ];
        if self.server.is_mariadb() {
            statements.push("SET SESSION check_constraint_checks = 0".to_string());
            statements.push(format!(
                "SET SESSION max_statement_time = {:.3}",
                statement_time.as_secs_f64()
            ));
        } else {
            statements.push(format!(
                "SET SESSION max_execution_time = {}",
                statement_time.as_millis().max(1)
            ));
        }
        for s in &statements {
            self.queue(|sql| sql.extend_from_slice(s.as_bytes()));
        }
        // The greeting's connection id is 32 bits; the server's own may be
        // wider, and `KILL` must name exactly this connection.
        const WHO: &str = "SELECT CONNECTION_ID(), @@server_id, @@innodb_rollback_on_timeout, \
                           @@lower_case_table_names";
        // When the server started: an account that may not read the status
        // is told so and goes on (`ServerRun::started_at` stays unknown).
        let started: &[u8] = if self.server.is_mariadb() {
            b"SELECT UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) FROM information_schema.GLOBAL_STATUS \
              WHERE VARIABLE_NAME = 'UPTIME'"
        } else {
            b"SELECT UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) FROM performance_schema.global_status \
              WHERE VARIABLE_NAME = 'Uptime'"
        };
        self.queue(|sql| sql.extend_from_slice(WHO.as_bytes()));
        self.queue(|sql| sql.extend_from_slice(started));
        for s in &statements {
            if let Answer::Refused(e) = self.answer(&mut Discard).await? {
                return Err(Failure::refused(format!("{s}: {e}")));
            }
        }
        let mut who = FirstRow::default();
        if let Answer::Refused(e) = self.answer(&mut who).await? {
            return Err(Failure::refused(format!("{WHO}: {e}")));
        }
        self.connection_id = who
            .number(0)
            .ok_or_else(|| Failure::protocol("CONNECTION_ID() answered no number"))?;
        self.server_run.server_id = who.number(1);
        self.rollback_on_timeout = who.number(2) == Some(1);
        self.lower_case_names = who.number(3) == Some(1);
        let mut since = FirstRow::default();
        self.server_run.started_at = match self.answer(&mut since).await? {
            Answer::Done(_) => since.number(0),
            Answer::Refused(e) => {
                tracing::debug!(error = %e, "cannot read the server's Uptime");
                None
            }
        };
        if self.server.is_vitess() {
            self.ask_for_atomic_commits().await?;
        }
        Ok(())
    }

    /// Behind vtgate, a write group that touched several shards commits
    /// with two-phase commit (`transaction_mode` TWOPC): all its shards or
    /// none, as on one server. vtgate's MULTI commits them one after the
    /// other (a failure between two leaves the first committed), SINGLE
    /// refuses the group at its second shard. A group on one shard commits
    /// plainly either way. A vtgate that refuses TWOPC leaves its own mode,
    /// said once in the log (docs/vitess.md).
    async fn ask_for_atomic_commits(&mut self) -> Result<(), Failure> {
        self.queue(|q| q.extend_from_slice(b"SET SESSION transaction_mode = 'TWOPC'"));
        if let Answer::Refused(e) = self.answer(&mut Discard).await? {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                tracing::warn!(
                    error = %e,
                    "vtgate refused transaction_mode TWOPC: a write group over several shards \
                     commits in vtgate's own mode, shard by shard"
                )
            });
        }
        Ok(())
    }

    /// The session duties of a replicated set-up. A server that cannot
    /// report GTIDs, or whose tracker is off (`gtid_tracking`), leaves
    /// `tracks_gtids` off (the topology and the row cache then treat each
    /// commit as unknown); a Galera node that refuses causal reads is not
    /// used.
    pub(super) async fn set_up_replicated(&mut self, r: Replicated) -> Result<(), Failure> {
        if self.tracks_gtids {
            match self.ask_gtid_tracking().await? {
                Tracking::On => {}
                Tracking::Refused(e) => {
                    tracing::warn!(error = %e, "the server cannot report the GTID of commits");
                    self.tracks_gtids = false;
                }
                Tracking::Off => {
                    static ONCE: std::sync::Once = std::sync::Once::new();
                    let mariadb = self.server.is_mariadb();
                    ONCE.call_once(|| tracing::warn!("{}", tracking_off(mariadb)));
                    self.tracks_gtids = false;
                    self.tracking_off = true;
                }
            }
            self.reported_gtid = None;
            // Whether every commit that writes gets a GTID here: a binary
            // log, and on MySQL gtid_mode ON. Only then is a commit that
            // wrote and reported none of unknown position (the tracker off)
            // rather than one the server did not number (a Galera node
            // without a binary log, MySQL without GTIDs).
            let numbered: &[u8] = if self.server.is_mariadb() {
                b"SELECT @@GLOBAL.log_bin"
            } else {
                b"SELECT @@GLOBAL.log_bin AND @@GLOBAL.gtid_mode = 'ON'"
            };
            self.queue(|q| q.extend_from_slice(numbered));
            let mut row = FirstRow::default();
            self.numbers_commits = match self.answer(&mut row).await? {
                Answer::Done(_) => row.number(0) == Some(1),
                Answer::Refused(_) => false,
            };
        }
        if r.causal_reads {
            self.queue(|q| q.extend_from_slice(b"SET SESSION wsrep_sync_wait = 1"));
            if let Answer::Refused(e) = self.answer(&mut Discard).await? {
                return Err(Failure::refused(format!(
                    "SET SESSION wsrep_sync_wait = 1 (causal reads on a Galera node): {e}"
                )));
            }
        }
        Ok(())
    }
}

/// Refuses servers older than hsd supports, with what is needed.
fn check_version(server: &ServerVersion, text: &str) -> Result<(), String> {
    let (min, what) = if server.is_mariadb() {
        (MIN_MARIADB, "MariaDB")
    } else {
        (MIN_MYSQL, "MySQL")
    };
    if server.at_least(min.0, min.1, min.2) {
        return Ok(());
    }
    Err(format!(
        "the server is {what} {text}; hsd needs {what} {}.{}.{} or later",
        min.0, min.1, min.2
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_servers_are_refused_with_what_is_needed() {
        let check = |v: &str| check_version(&ServerVersion::parse(v), v);
        assert!(check("8.0.31").is_ok());
        assert!(check("8.0.17").is_ok());
        assert!(check("9.1.0").is_ok());
        assert!(check("5.5.5-10.11.6-MariaDB-0+deb12u1").is_ok());
        assert!(check("11.4.2-MariaDB").is_ok());
        let e = check("8.0.16").unwrap_err();
        assert_eq!(
            e,
            "the server is MySQL 8.0.16; hsd needs MySQL 8.0.17 or later"
        );
        let e = check("5.7.44-log").unwrap_err();
        assert!(e.contains("MySQL 8.0.17 or later"), "{e}");
        let e = check("5.5.5-10.6.18-MariaDB").unwrap_err();
        assert!(e.contains("MariaDB 10.11.0 or later"), "{e}");
    }
}
