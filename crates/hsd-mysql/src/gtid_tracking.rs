//! At login, with replicas or the row cache: asks the server to report the
//! GTID of each commit in its OK packet, then checks that the request took
//! effect. An administrator can switch the tracker off for every session
//! (MariaDB: `SET GLOBAL session_track_system_variables = ''`, after which
//! a session's own `SET SESSION` reads back as asked and still reports
//! nothing; MySQL: a session variable that does not read back as set). A
//! link whose tracker is off treats every commit as of unknown position:
//! reads that must see it ask the server's position first. `hsd serve`
//! logs [`tracking_off`]'s line once, `hsd check` reports it as a warning.

use super::link::{Answer, Discard, FirstValue, Link};
use mysql_wire::session_state::SERVER_SESSION_STATE_CHANGED;

/// What hsd says when a server does not report its commits' GTIDs although
/// asked (`hsd serve` and `hsd check` alike).
pub(crate) fn tracking_off(mariadb: bool) -> String {
    let setting = if mariadb {
        "session_track_system_variables = 'last_gtid'"
    } else {
        "session_track_gtids = OWN_GTID"
    };
    format!(
        "the server does not report the GTID of commits although hsd asked ({setting} did not \
         take effect: is the tracker switched off globally?): every commit of hsd's is then of \
         unknown position, and each read that must see one asks the server's position first \
         (slower; set the global value back to let hsd track its commits)"
    )
}

/// Whether the tracker took effect.
pub(crate) enum Tracking {
    On,
    /// The server refused the request (its error).
    Refused(String),
    /// The request was accepted and did not take effect.
    Off,
}

impl Link {
    /// Asks for GTID tracking and checks that it took effect.
    pub(super) async fn ask_gtid_tracking(&mut self) -> Result<Tracking, super::link::Failure> {
        if self.server.is_mariadb() {
            // The probe: a tracked variable set once more must come back as
            // a state change; then only last_gtid stays tracked.
            for sql in [
                &b"SET SESSION session_track_system_variables = 'last_gtid,autocommit'"[..],
                b"SET SESSION autocommit = @@SESSION.autocommit",
            ] {
                self.queue(|q| q.extend_from_slice(sql));
            }
            let asked = self.answer(&mut Discard).await?;
            let probed = self.answer(&mut Discard).await?;
            self.queue(|q| {
                q.extend_from_slice(b"SET SESSION session_track_system_variables = 'last_gtid'")
            });
            let kept = self.answer(&mut Discard).await?;
            return Ok(match (asked, probed, kept) {
                (Answer::Refused(e), _, _) | (_, _, Answer::Refused(e)) => {
                    Tracking::Refused(e.to_string())
                }
                (_, Answer::Done(ok), _) if ok.status & SERVER_SESSION_STATE_CHANGED != 0 => {
                    Tracking::On
                }
                _ => Tracking::Off,
            });
        }
        self.queue(|q| q.extend_from_slice(b"SET SESSION session_track_gtids = OWN_GTID"));
        if let Answer::Refused(e) = self.answer(&mut Discard).await? {
            return Ok(Tracking::Refused(e.to_string()));
        }
        // vtgate accepts the SET and reports nothing whatever it reads back
        // (docs/vitess.md); hsd refuses replicas and the row cache behind
        // it at start, so nothing relies on its answer.
        if self.server.is_vitess() {
            return Ok(Tracking::On);
        }
        self.queue(|q| q.extend_from_slice(b"SELECT @@SESSION.session_track_gtids"));
        let mut value = FirstValue::default();
        Ok(match self.answer(&mut value).await? {
            Answer::Done(_)
                if value
                    .0
                    .as_deref()
                    .is_some_and(|v| v.eq_ignore_ascii_case(b"OWN_GTID")) =>
            {
                Tracking::On
            }
            Answer::Refused(e) => Tracking::Refused(e.to_string()),
            Answer::Done(_) => Tracking::Off,
        })
    }
}
