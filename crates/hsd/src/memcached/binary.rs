//! The binary protocol's commands, run by the same session methods as the
//! text commands (`session`) and answered with mc-proto's binary encoders.
//! Quiet opcodes leave out what memcached leaves out (`suppressed`). What
//! differs from memcached: a storage failure answers status 0x82 (out of
//! memory: memcached's answer when it cannot do a command), `Flush`
//! runs as `flush_all` (refused "Auth failure." where every container's
//! flush_policy is disabled, as memcached -F refuses it). A store's and an
//! incr's answer carry the item's new cas, as memcached's. The SASL opcodes answer
//! "Unknown command" too unless the port has SASL (`sasl`), as memcached's
//! without `-S`.

use super::ops::{Failure, ERR_DATA_TOO_LONG};
use super::sasl::SaslOutcome;
use super::session::{Counted, Flow, McSession, Outcome};
use super::stats::{self, StatsAnswer};
use hsd_storage::Backend;
use mc_proto::binary::{
    sasl, suppressed, write_counter, write_error, write_get_hit, write_response, write_stat,
    BinaryStore, ResponseHeader, Status,
};
use mc_proto::{BinaryCommand, BinaryRequest, StoreMode};

/// Appends `status` for `req` unless its quiet form leaves it out; an error
/// status carries memcached's message.
pub(super) fn reply(out: &mut Vec<u8>, req: &BinaryRequest<'_>, status: Status, value: &[u8]) {
    if suppressed(&req.command, status) {
        return;
    }
    if status == Status::NoError {
        let header = ResponseHeader {
            opcode: req.header.opcode,
            status,
            opaque: req.header.opaque,
            cas: 0,
        };
        write_response(out, header, &[], &[], value);
    } else {
        write_error(out, req.header.opcode, req.header.opaque, status);
    }
}

/// The status of a command that could not be done: a key the key column
/// would not keep as given is memcached's answer to a malformed key
/// (Invalid arguments; the connection goes on), a value longer than its
/// column "Too large.", a row that would not read back as written "Not
/// stored."; anything else memcached's answer when it cannot do a command
/// (Out of memory).
fn failure_status(f: Failure) -> Status {
    match f {
        Failure::BadKey => Status::InvalidArguments,
        Failure::Storage(hs_proto::ErrorKind::Storage(ERR_DATA_TOO_LONG)) => Status::TooLarge,
        Failure::Unkept(_) | Failure::Disabled(_) => Status::NotStored,
        _ => Status::OutOfMemory,
    }
}

/// A success carrying the item's new cas (stores), unless quiet.
fn reply_cas(out: &mut Vec<u8>, req: &BinaryRequest<'_>, cas: u64) {
    if suppressed(&req.command, Status::NoError) {
        return;
    }
    let header = ResponseHeader {
        opcode: req.header.opcode,
        status: Status::NoError,
        opaque: req.header.opaque,
        cas,
    };
    write_response(out, header, &[], &[], b"");
}

impl<B: Backend> McSession<B> {
    /// Handles one binary request; its answer goes to `out`.
    pub(super) async fn handle_binary(
        &mut self,
        req: BinaryRequest<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        let containers = self.containers.clone();
        let sep = containers.separator.as_slice();
        let failed = |out: &mut Vec<u8>, f: Failure| reply(out, &req, failure_status(f), b"");
        match &req.command {
            BinaryCommand::Get {
                key, return_key, ..
            }
            | BinaryCommand::GetAndTouch {
                key, return_key, ..
            } => {
                let found = match req.command {
                    BinaryCommand::GetAndTouch { exptime, .. } => {
                        self.touch(key, exptime as i32, sep).await
                    }
                    _ => self.fetch_one(key, sep).await,
                };
                match found {
                    Ok(Some(item)) => {
                        let shown: &[u8] = if *return_key { key } else { b"" };
                        write_get_hit(out, &req.header, item.cas, item.flags, shown, &item.value);
                    }
                    Ok(None) => reply(out, &req, Status::KeyNotFound, b""),
                    Err(f) => failed(out, f),
                }
            }
            BinaryCommand::Touch { key, exptime } => {
                match self.touch(key, *exptime as i32, sep).await {
                    // As memcached: the flags as extras, no value.
                    Ok(Some(item)) => {
                        write_get_hit(out, &req.header, item.cas, item.flags, b"", b"")
                    }
                    Ok(None) => reply(out, &req, Status::KeyNotFound, b""),
                    Err(f) => failed(out, f),
                }
            }
            BinaryCommand::Store {
                mode,
                key,
                client_flags,
                exptime,
                value,
                ..
            } => {
                let cas = req.header.cas;
                let text_mode = match mode {
                    BinaryStore::Set | BinaryStore::Replace if cas != 0 => StoreMode::Cas(cas),
                    BinaryStore::Set => StoreMode::Set,
                    BinaryStore::Add => StoreMode::Add,
                    BinaryStore::Replace => StoreMode::Replace,
                    BinaryStore::Append => StoreMode::Append,
                    BinaryStore::Prepend => StoreMode::Prepend,
                };
                let stored = self
                    .store(key, text_mode, *client_flags, *exptime as i32, value, sep)
                    .await;
                let status = match stored {
                    Ok(Outcome::Stored) => Status::NoError,
                    Ok(Outcome::Exists) => Status::KeyExists,
                    Ok(Outcome::NotFound) => Status::KeyNotFound,
                    // memcached's words for each mode's refusal.
                    Ok(Outcome::NotStored) => match mode {
                        BinaryStore::Add => Status::KeyExists,
                        BinaryStore::Replace => Status::KeyNotFound,
                        _ => Status::NotStored,
                    },
                    Err(f) => failure_status(f),
                };
                if status == Status::NoError {
                    // As memcached: the new item's cas.
                    reply_cas(out, &req, self.written);
                } else {
                    reply(out, &req, status, b"");
                }
            }
            BinaryCommand::Delete { key, .. } => {
                let cas = (req.header.cas != 0).then_some(req.header.cas);
                let status = match self.delete(key, cas, sep).await {
                    Ok(Outcome::Stored) => Status::NoError,
                    Ok(Outcome::Exists) => Status::KeyExists,
                    Ok(_) => Status::KeyNotFound,
                    Err(f) => failure_status(f),
                };
                reply(out, &req, status, b"");
            }
            BinaryCommand::Arithmetic {
                key,
                increment,
                delta,
                initial,
                exptime,
                ..
            } => {
                // An expiry of all ones: do not create on a miss.
                let create = (*exptime != u32::MAX).then_some((*initial, *exptime as i32));
                match self.count(key, *delta, *increment, create, sep).await {
                    Ok(Counted::Value(n, _)) => {
                        if !suppressed(&req.command, Status::NoError) {
                            write_counter(out, &req.header, self.written, n);
                        }
                    }
                    Ok(Counted::NotFound) => reply(out, &req, Status::KeyNotFound, b""),
                    Ok(Counted::NonNumeric) => reply(out, &req, Status::NonNumeric, b""),
                    Err(f) => failed(out, f),
                }
            }
            BinaryCommand::Quit { .. } => {
                reply(out, &req, Status::NoError, b"");
                return Flow::Close;
            }
            BinaryCommand::Noop => reply(out, &req, Status::NoError, b""),
            BinaryCommand::Version => reply(out, &req, Status::NoError, super::VERSION.as_bytes()),
            BinaryCommand::Stat { group } => {
                let group = (!group.is_empty()).then_some(*group);
                match stats::answer(group, &self.stats) {
                    StatsAnswer::Lines(lines) => {
                        for (name, value) in lines {
                            write_stat(out, &req.header, name, value);
                        }
                        write_stat(out, &req.header, "", "");
                    }
                    StatsAnswer::Reset => write_stat(out, &req.header, "", ""),
                    StatsAnswer::Unknown => reply(out, &req, Status::KeyNotFound, b""),
                }
            }
            BinaryCommand::SaslListMechs if self.sasl.enabled() => {
                reply(out, &req, Status::NoError, sasl::MECHANISMS.as_bytes())
            }
            BinaryCommand::SaslAuth { mechanism, data } if self.sasl.enabled() => {
                let outcome = self.sasl.auth(mechanism, data);
                return sasl_reply(out, &req, outcome);
            }
            BinaryCommand::SaslStep { mechanism, data } if self.sasl.enabled() => {
                let outcome = self.sasl.step(mechanism, data);
                return sasl_reply(out, &req, outcome);
            }
            BinaryCommand::Flush { delay, .. } => {
                // As text flush_all; refused as memcached -F refuses it.
                let status = match self.flush_all(i64::from(*delay)).await {
                    Ok(true) => Status::NoError,
                    Ok(false) => Status::AuthError,
                    Err(f) => failure_status(f),
                };
                reply(out, &req, status, b"");
            }
            BinaryCommand::SaslListMechs
            | BinaryCommand::SaslAuth { .. }
            | BinaryCommand::SaslStep { .. } => reply(out, &req, Status::UnknownCommand, b""),
        }
        Flow::Continue
    }
}

/// Answers a SASL request as memcached does: "Authenticated", an empty
/// "continue", or "Auth failure." (after which the connection goes on,
/// unless it failed too often).
fn sasl_reply(out: &mut Vec<u8>, req: &BinaryRequest<'_>, outcome: SaslOutcome) -> Flow {
    match outcome {
        SaslOutcome::Authenticated => {
            reply(out, req, Status::NoError, sasl::AUTHENTICATED.as_bytes())
        }
        SaslOutcome::Continue => reply(out, req, Status::AuthContinue, b""),
        SaslOutcome::Failed | SaslOutcome::FailedTooOften => {
            reply(out, req, Status::AuthError, b"")
        }
    }
    if outcome == SaslOutcome::FailedTooOften {
        Flow::Close
    } else {
        Flow::Continue
    }
}
