//! The server's error numbers as HandlerSocket clients see them, and which
//! errors end a write group's transaction.

use hsd_storage::{StorageError, ERR_DUPLICATE_KEY, ERR_NOT_NULL};
use mysql_wire::ErrPacket;

/// MySQL server error numbers hsd treats specially.
pub(super) mod codes {
    pub(crate) const ER_DUP_KEY: u16 = 1022;
    /// What a Galera node answers while it is not ready to serve ("WSREP
    /// has not yet prepared node for application use").
    pub(crate) const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    pub(crate) const ER_BAD_NULL_ERROR: u16 = 1048;
    pub(crate) const ER_SERVER_SHUTDOWN: u16 = 1053;
    pub(crate) const ER_DUP_ENTRY: u16 = 1062;
    pub(crate) const ER_LOCK_DEADLOCK: u16 = 1213;
    pub(crate) const ER_DUP_ENTRY_WITH_KEY_NAME: u16 = 1586;
    pub(crate) const ER_CONNECTION_KILLED: u16 = 1927;
    pub(crate) const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
    /// MySQL 8: a locking read with NOWAIT met a lock.
    pub(crate) const ER_LOCK_NOWAIT: u16 = 3572;
    pub(crate) const ER_ROW_IS_REFERENCED_2: u16 = 1451;
    pub(crate) const ER_NO_REFERENCED_ROW_2: u16 = 1452;
    pub(crate) const ER_AUTOINC_READ_FAILED: u16 = 1467;
}

/// The storage engine's handler error numbers the original answered
/// (`1 1 <n>`) where MariaDB's SQL layer reports its own.
mod handler_errors {
    pub(super) const LOCK_WAIT_TIMEOUT: u32 = hsd_storage::ERR_LOCK_WAIT_TIMEOUT;
    pub(super) const LOCK_DEADLOCK: u32 = hsd_storage::ERR_LOCK_DEADLOCK;
    pub(super) const NO_REFERENCED_ROW: u32 = 151;
    pub(super) const ROW_IS_REFERENCED: u32 = 152;
    pub(super) const AUTO_INC_READ_FAILED: u32 = 166;
}

/// A server error as a client sees it.
pub(super) fn refused_error(e: &ErrPacket) -> StorageError {
    let code = match e.code {
        codes::ER_DUP_ENTRY | codes::ER_DUP_KEY | codes::ER_DUP_ENTRY_WITH_KEY_NAME => {
            ERR_DUPLICATE_KEY
        }
        codes::ER_BAD_NULL_ERROR => ERR_NOT_NULL,
        codes::ER_LOCK_WAIT_TIMEOUT => handler_errors::LOCK_WAIT_TIMEOUT,
        codes::ER_LOCK_DEADLOCK => handler_errors::LOCK_DEADLOCK,
        codes::ER_NO_REFERENCED_ROW_2 => handler_errors::NO_REFERENCED_ROW,
        codes::ER_ROW_IS_REFERENCED_2 => handler_errors::ROW_IS_REFERENCED,
        codes::ER_AUTOINC_READ_FAILED => handler_errors::AUTO_INC_READ_FAILED,
        other => u32::from(other),
    };
    if matches!(
        e.code,
        codes::ER_SERVER_SHUTDOWN | codes::ER_CONNECTION_KILLED | codes::ER_UNKNOWN_COM_ERROR
    ) {
        return StorageError::Unavailable(e.to_string());
    }
    StorageError::Refused {
        code,
        message: e.to_string(),
    }
}

/// Whether the server refused a connection for its limits: too many
/// connections (ER_CON_COUNT_ERROR), too many of the account's
/// (ER_TOO_MANY_USER_CONNECTIONS), its MAX_USER_CONNECTIONS
/// (ER_USER_LIMIT_REACHED). Transient, unlike a refused login.
pub(super) fn limits_connections(code: u16) -> bool {
    matches!(code, 1040 | 1203 | 1226)
}

/// A read's error that tells about the server, not the data: a lock held
/// there past the statement time (MariaDB's max_statement_time 1969, MySQL's
/// max_execution_time 3024, a lock wait 1205, a statement an administrator
/// ended 1317), or its connection limits. Another server may well answer.
pub(super) fn says_nothing_about_the_data(e: &StorageError) -> bool {
    const PLACE_CODES: [u32; 7] = [
        hsd_storage::ERR_STATEMENT_TIMEOUT,
        3024,
        handler_errors::LOCK_WAIT_TIMEOUT,
        1317,
        1040,
        1203,
        1226,
    ];
    matches!(e, StorageError::Refused { code, .. } if PLACE_CODES.contains(code))
}

/// The server rolled back the whole transaction, not just the statement:
/// a deadlock always; a lock wait that timed out when the server runs with
/// `innodb_rollback_on_timeout` (`rollback_on_timeout`); a lost link.
/// Statements after it in the group then run in a new transaction, so the
/// whole group must fail or run again, never the one write alone. (An
/// error packet carries no status flags to tell this from; these are the
/// errors InnoDB ends a transaction with.)
pub(super) fn dooms_transaction(e: &StorageError, rollback_on_timeout: bool) -> bool {
    match e {
        StorageError::Refused { code, .. } => {
            *code == handler_errors::LOCK_DEADLOCK
                || (rollback_on_timeout && *code == handler_errors::LOCK_WAIT_TIMEOUT)
        }
        StorageError::Unavailable(_) => true,
        _ => false,
    }
}

/// An error of a write group that an earlier failure doomed.
pub(super) fn doomed(e: &StorageError) -> StorageError {
    match e {
        StorageError::Unavailable(m) => {
            StorageError::Unavailable(format!("earlier in this write group: {m}"))
        }
        StorageError::Refused { code, message } => StorageError::Refused {
            code: *code,
            message: format!("earlier in this write group: {message}"),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16) -> StorageError {
        refused_error(&ErrPacket {
            code,
            sql_state: "HY000".into(),
            message: "x".into(),
        })
    }

    #[test]
    fn errors_of_a_server_not_of_the_data_send_a_read_elsewhere() {
        for code in [
            1969,
            3024,
            codes::ER_LOCK_WAIT_TIMEOUT,
            1317,
            1040,
            1203,
            1226,
        ] {
            assert!(says_nothing_about_the_data(&refused(code)), "{code}");
        }
        for code in [codes::ER_DUP_ENTRY, 1054, 1146, 1267] {
            assert!(!says_nothing_about_the_data(&refused(code)), "{code}");
        }
    }

    #[test]
    fn a_lock_wait_timeout_ends_the_transaction_only_when_the_server_says_so() {
        let timeout = refused(codes::ER_LOCK_WAIT_TIMEOUT);
        assert!(!dooms_transaction(&timeout, false));
        assert!(dooms_transaction(&timeout, true));
        let deadlock = refused(codes::ER_LOCK_DEADLOCK);
        assert!(dooms_transaction(&deadlock, false));
        let duplicate = refused(codes::ER_DUP_ENTRY);
        assert!(!dooms_transaction(&duplicate, true));
        assert!(dooms_transaction(
            &StorageError::Unavailable("gone".into()),
            false
        ));
    }
}
